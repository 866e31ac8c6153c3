"""Kubernetes RBAC rules: what one rule grants, decided as the API server's RBAC authorizer decides.

This module is the only place that matches RBAC rules. The access surface's Kubernetes rules
(`arenac.model.access.KubeRule`, which the channels bind actions with), the broker's authorizer
(`arenac.broker.rbac`) and the least-privilege lint (`arenac.k8s.rbac_lint`) all ask it; lowering
and the lint share its vocabulary (the grant words, the escalating verbs, the verbs a name cannot
restrict).

Contract, after Kubernetes' `rbac/v1` helpers (VerbMatches, APIGroupMatches, ResourceMatches,
ResourceNameMatches):

- `PolicyRule.allows(request)` holds when all four parts match:
  verb      `*`, or the request's verb;
  apiGroup  `*`, or the request's group (`""` is the core group);
  resource  `*` (every resource and every subresource), or exactly the request's `resource` or
            `resource/subresource` (a rule on `pods` does not cover `pods/log`), or `*/sub` for a
            request of subresource `sub` on any resource; `pods/*` is no pattern in RBAC and
            matches only itself;
  names     no `resourceNames`, or the request's name is one of them: a request without a name
            (a plain list, a create, a deletecollection) is never granted by a named rule.
- `PolicyRule.reaches(groups, resources)` holds when the rule's groups and resources cover one
  of the resources or any subresource of it (`roles`, `roles/x`, `*/x`, `*`), whatever the verb
  and the name: the question a least-privilege check asks ("can this rule touch secrets at
  all?"). It errs on the side of reaching: `*/x` reaches every resource that might have an `x`.
- `PolicyRule.from_manifest(raw)` reads one rule of a Role or ClusterRole as YAML gives it: a
  field that is not a list is read as empty, never split into characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ALL = "*"
RBAC_GROUP = "rbac.authorization.k8s.io"

# the words an access surface's `allow` may say: each admits one kind of grant that least
# privilege otherwise rejects (lowering checks a spec's rules with them, the lint a bundle's RBAC)
GRANTS: tuple[str, ...] = ("secrets", "cluster", "escalate", "bind", "impersonate", "wildcard")
# verbs that let a subject raise its own privileges; each needs `allow <verb>`
ESCALATING_VERBS: tuple[str, ...] = ("escalate", "bind", "impersonate")
# verbs whose requests carry no object name, so `resourceNames` cannot restrict them: a named rule
# never grants them (a list or watch names an object only through a field selector, which the
# agent's kubectl does not send), and a rule that pairs them with names says more than it grants
VERBS_WITHOUT_NAMES: tuple[str, ...] = ("list", "watch", "create", "deletecollection")


@dataclass(frozen=True)
class ResourceRequest:
    """The authorization attributes of one resource request (`kubectl get pods` is `list pods`,
    `kubectl logs P` is `get pods/log P`, `kubectl exec P` is `create pods/exec P`)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    name: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @classmethod
    def of(cls, verb: str, group: str, resource: str, name: str | None = None) -> ResourceRequest:
        """A request whose resource may carry its subresource (`deployments/scale`)."""
        base, _, sub = resource.partition("/")
        return cls(verb, group, base, sub, name or "")


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule (a Role's or ClusterRole's `rules[i]`)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_manifest(cls, raw: object) -> PolicyRule:
        data: Mapping[object, object] = raw if isinstance(raw, Mapping) else {}
        return cls(
            verbs=_words(data.get("verbs")),
            api_groups=_words(data.get("apiGroups")),
            resources=_words(data.get("resources")),
            resource_names=_words(data.get("resourceNames")),
            non_resource_urls=_words(data.get("nonResourceURLs")),
        )

    def allows(self, request: ResourceRequest) -> bool:
        return (
            self.allows_verb(request.verb)
            and self.allows_group(request.group)
            and any(_resource_matches(pattern, request.resource, request.subresource) for pattern in self.resources)
            and (not self.resource_names or request.name in self.resource_names)
        )

    def allows_verb(self, verb: str) -> bool:
        return ALL in self.verbs or verb in self.verbs

    def allows_group(self, group: str) -> bool:
        return ALL in self.api_groups or group in self.api_groups

    def reaches(self, groups: Iterable[str], resources: Iterable[str]) -> bool:
        """Some verb, on one of `resources` (or a subresource of it) in one of `groups`, whatever
        the object's name."""
        wanted = tuple(resources)
        return any(self.allows_group(group) for group in groups) and any(
            _resource_covers(pattern, resource) for pattern in self.resources for resource in wanted
        )

    def unrestricted_by_names(self) -> tuple[str, ...]:
        """The verbs (and `*`) of a named rule that its names cannot restrict, sorted; () for an
        unnamed rule."""
        if not self.resource_names:
            return ()
        return tuple(sorted({verb for verb in self.verbs if verb in VERBS_WITHOUT_NAMES or verb == ALL}))


def _resource_matches(pattern: str, resource: str, subresource: str) -> bool:
    """Kubernetes' ResourceMatches for one of a rule's resources."""
    if pattern in (ALL, f"{resource}/{subresource}" if subresource else resource):
        return True
    return bool(subresource) and pattern == f"{ALL}/{subresource}"


def _resource_covers(pattern: str, resource: str) -> bool:
    """The pattern matches the resource itself or some subresource of it."""
    return pattern in (ALL, resource) or pattern.startswith((f"{resource}/", f"{ALL}/"))


def _words(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(str(item) for item in value)
