"""Hold RBAC objects to least privilege.

Contract of `lint_rbac(objects, allow)`:

- Only objects of the rbac.authorization.k8s.io API group are read (Role, ClusterRole,
  RoleBinding, ClusterRoleBinding); everything else is ignored. Nothing is mutated.
- A problem carries the grant word that would permit it; it is reported unless that
  word is in `allow` (an access profile's explicit grant). The grant words are:

    wildcard     "*" in verbs, apiGroups or nonResourceURLs, or in a resource name
                 ("*", "pods/*", "*/scale")
    secrets      a rule naming `secrets` (or a subresource of it), or a resource
                 wildcard (`*`, `*/sub`) over the core API group, which covers secrets
    escalate     the verb escalate, or verb "*" on roles/clusterroles of the RBAC group
    bind         the verb bind, or verb "*" on roles/clusterroles of the RBAC group
    impersonate  a verb impersonate (or constrained impersonate:/impersonate-on:), or
                 verb "*" on users/groups/serviceaccounts/uids/userextras

  Whether a rule reaches a resource ("on roles" above: `roles`, `roles/sub`, `*`, `*/sub`, in
  the group or `*`) is `arenac.model.rbac.PolicyRule.reaches`, the one RBAC matcher; the grant
  words, the escalating verbs and the verbs a name cannot restrict are its vocabulary too.
    cluster      a ClusterRole, a ClusterRoleBinding, or a RoleBinding whose roleRef
                 is a ClusterRole

  A wildcard therefore also reports the secrets/escalate/bind/impersonate access it
  implies: allowing "wildcard" alone does not let those through.
- Always reported, whatever `allow` says (grant None): a rule with `resourceNames`
  and a verb Kubernetes does not restrict by name (list, watch, create,
  deletecollection, or "*"), since the rule would grant more than it says.
- An unknown word in `allow` raises ValueError.
- The result is sorted by kind, name, rule index (object-level problems, rule None,
  first) and message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arenac.model import rbac
from arenac.model.rbac import ALL, ESCALATING_VERBS, RBAC_GROUP, PolicyRule

__all__ = ["GRANTS", "RbacProblem", "lint_rbac"]

GRANTS: frozenset[str] = frozenset(rbac.GRANTS)

_RULED_KINDS = ("Role", "ClusterRole")
_BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
_ROLE_RESOURCES: tuple[str, ...] = ("roles", "clusterroles")
_IDENTITY_RESOURCES: tuple[str, ...] = ("users", "groups", "serviceaccounts", "uids", "userextras")
_IDENTITY_GROUPS: tuple[str, ...] = ("", "authentication.k8s.io")


@dataclass(frozen=True)
class RbacProblem:
    kind: str
    name: str
    rule: int | None
    message: str
    grant: str | None = None  # the grant word that would permit it; None: never permitted


def _listed(words: tuple[str, ...] | list[str]) -> str:
    return ", ".join(sorted(set(words)))


def _wildcard(rule: PolicyRule) -> str | None:
    fields = {
        "verbs": ALL in rule.verbs,
        "apiGroups": ALL in rule.api_groups,
        "resources": any(ALL in r for r in rule.resources),
        "nonResourceURLs": any(ALL in url for url in rule.non_resource_urls),
    }
    hits = [name for name, hit in fields.items() if hit]
    return f"uses the wildcard '*' in {', '.join(hits)}" if hits else None


def _secrets(rule: PolicyRule) -> str | None:
    # a rule that names secrets, in whichever group, says what it means to grant
    if any(r.split("/", 1)[0] == "secrets" for r in rule.resources):
        return "grants access to secrets"
    if rule.reaches(("",), ("secrets",)):
        return "grants access to secrets through the resource wildcard"
    return None


def _verb(rule: PolicyRule, verb: str) -> str | None:
    if verb == "impersonate":
        named = [v for v in rule.verbs if v.startswith("impersonate")]
        targets, groups = _IDENTITY_RESOURCES, _IDENTITY_GROUPS
    else:
        named = [v for v in rule.verbs if v == verb]
        targets, groups = _ROLE_RESOURCES, (RBAC_GROUP,)
    if named:
        return f"grants the verb {_listed(named)}"
    if ALL in rule.verbs and rule.reaches(groups, targets):
        return f"grants {verb} through the verb wildcard"
    return None


def _unnamed(rule: PolicyRule) -> str | None:
    verbs = rule.unrestricted_by_names()
    if not verbs:
        return None
    return (
        f"restricts resourceNames but Kubernetes ignores them for {_listed(verbs)}, "
        "so the rule grants more than it names"
    )


def _rule_findings(rule: PolicyRule) -> list[tuple[str | None, str | None]]:
    """(grant word, message or None) for every check of one rule."""
    return [
        ("wildcard", _wildcard(rule)),
        ("secrets", _secrets(rule)),
        *((verb, _verb(rule, verb)) for verb in ESCALATING_VERBS),
        (None, _unnamed(rule)),
    ]


def _object_findings(kind: str, obj: dict[str, Any]) -> list[tuple[int | None, str | None, str]]:
    """(rule index, grant word, message) for every problem of one RBAC object."""
    found: list[tuple[int | None, str | None, str]] = []
    if kind == "ClusterRole":
        found.append((None, "cluster", "is a ClusterRole: its grants reach every namespace"))
    if kind == "ClusterRoleBinding":
        found.append((None, "cluster", "is a ClusterRoleBinding: it grants across the whole cluster"))
    if kind == "RoleBinding":
        ref = obj.get("roleRef")
        if isinstance(ref, dict) and ref.get("kind") == "ClusterRole":
            found.append((None, "cluster", f"references the ClusterRole {ref.get('name')!r}"))
    if kind in _RULED_KINDS:
        rules = obj.get("rules")
        for index, raw in enumerate(rules if isinstance(rules, list) else []):
            for grant, message in _rule_findings(PolicyRule.from_manifest(raw)):
                if message is not None:
                    found.append((index, grant, message))
    return found


def _rbac_kind(obj: object) -> str | None:
    if not isinstance(obj, dict):
        return None
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or api_version.split("/", 1)[0] != RBAC_GROUP:
        return None
    return kind if kind in _RULED_KINDS + _BINDING_KINDS else None


def lint_rbac(objects: list[dict[str, Any]], allow: frozenset[str] = frozenset()) -> list[RbacProblem]:
    """Every least-privilege violation in `objects` that `allow` does not grant."""
    unknown = set(allow) - GRANTS
    if unknown:
        raise ValueError(f"unknown RBAC grant word(s) {_listed(list(unknown))}; known: {_listed(list(GRANTS))}")
    problems: list[RbacProblem] = []
    for obj in objects:
        kind = _rbac_kind(obj)
        if kind is None:
            continue
        metadata = obj.get("metadata")
        name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
        for rule, grant, message in _object_findings(kind, obj):
            if grant is None or grant not in allow:
                problems.append(RbacProblem(kind, name, rule, message, grant))
    return sorted(problems, key=lambda p: (p.kind, p.name, -1 if p.rule is None else p.rule, p.message))
