"""Kubernetes RBAC, decided the way the API server's RBAC authorizer decides.

Contract:
- `Authorizer(objects, user)` reads Role, ClusterRole, RoleBinding and ClusterRoleBinding objects
  (a bundle's `rbac/*.yaml`, see `load_rbac_dir`) and grants the union of the rules bound to
  `user` (default the agent's ServiceAccount `system:serviceaccount:arenac:arenac-agent`, which
  also belongs to the groups `system:serviceaccounts`, `system:serviceaccounts:<ns>` and
  `system:authenticated`). A RoleBinding grants its rules in its own namespace only; a
  ClusterRoleBinding everywhere. Nothing else is granted: no defaults, no discovery roles.
- The objects are as applied in `namespace` (default `arenac`, the local cluster's): a Role or
  RoleBinding that names no namespace is in it, as `kubectl apply -n` puts it there (the compiled
  bundles' rbac/ names none), never everywhere; a RoleBinding's ServiceAccount subject that names
  none is an account of the binding's namespace, as the API server's authorizer reads it, and a
  ClusterRoleBinding's binds no account.
- A request is an `ApiRequest(verb, group, resource, subresource, name, namespace)`, the
  attributes the API server derives from one HTTP call (`kubectl get pods` is `list pods`,
  `kubectl logs P` is `get pods/log P`, `kubectl exec P` is `create pods/exec P`).
- A rule matches as `arenac.model.rbac.PolicyRule.allows` decides (Kubernetes' `rbac/v1`
  helpers: verb, apiGroup and resource exact or `*`, `*/sub` for any resource's subresource
  `sub`; a rule with `resourceNames` never grants an unnamed `list`, `watch` or `create`).
- `forbidden(request)` is the message `kubectl` prints for a denial, word for word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arenac.model.rbac import RBAC_GROUP, PolicyRule, ResourceRequest

DEFAULT_NAMESPACE = "arenac"
AGENT_USER = f"system:serviceaccount:{DEFAULT_NAMESPACE}:arenac-agent"
__all__ = ["AGENT_USER", "DEFAULT_NAMESPACE", "RBAC_GROUP", "ApiRequest", "Authorizer", "PolicyRule", "agent_user",
           "forbidden_message", "load_rbac_dir", "rbac_namespace", "service_account_user"]


@dataclass(frozen=True)
class ApiRequest(ResourceRequest):
    """A resource request in a namespace ("" for cluster scope): what a RoleBinding's scope decides."""

    namespace: str = DEFAULT_NAMESPACE

    def describe(self) -> str:
        group = f".{self.group}" if self.group else ""
        name = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.full_resource}{group}{name}"


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


class Authorizer:
    def __init__(self, objects: Iterable[Mapping[str, Any]], user: str = AGENT_USER,
                 namespace: str = DEFAULT_NAMESPACE) -> None:
        self.user = user
        self._groups = _groups_of(user)
        objects = [obj for obj in objects if isinstance(obj, Mapping)]

        def placed(obj: Mapping[str, Any]) -> str:  # a namespaced object's namespace, as applied
            return str(obj["metadata"].get("namespace") or namespace)

        roles = {(placed(obj), obj["metadata"]["name"]): obj for obj in objects if obj.get("kind") == "Role"}
        cluster_roles = {obj["metadata"]["name"]: obj for obj in objects if obj.get("kind") == "ClusterRole"}
        # (namespace or "" for everywhere, rule)
        self.grants: list[tuple[str, PolicyRule]] = []
        for binding in objects:
            kind = binding.get("kind")
            if kind not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            scope = placed(binding) if kind == "RoleBinding" else ""
            if not self._binds_me(binding, scope):
                continue
            ref = binding.get("roleRef") or {}
            if ref.get("kind") == "Role" and kind == "RoleBinding":
                role = roles.get((scope, ref.get("name")))
            elif ref.get("kind") == "ClusterRole":
                role = cluster_roles.get(ref.get("name"))
            else:
                role = None
            for rule in (role or {}).get("rules") or ():
                self.grants.append((scope, PolicyRule.from_manifest(rule)))

    def _binds_me(self, binding: Mapping[str, Any], scope: str) -> bool:
        for subject in binding.get("subjects") or ():
            kind, name = subject.get("kind"), subject.get("name")
            # no namespace: the binding's own (a RoleBinding's; a ClusterRoleBinding's has none: no account)
            account_namespace = subject.get("namespace") or scope
            if kind == "ServiceAccount" and account_namespace and \
                    service_account_user(account_namespace, name) == self.user:
                return True
            if kind == "User" and name == self.user:
                return True
            if kind == "Group" and name in self._groups:
                return True
        return False

    def allows(self, request: ApiRequest) -> bool:
        return any((not scope or scope == request.namespace) and rule.allows(request)
                   for scope, rule in self.grants)

    def forbidden(self, request: ApiRequest) -> str:
        return forbidden_message(request, self.user)

    def rules_in(self, namespace: str) -> list[PolicyRule]:
        return [rule for scope, rule in self.grants if not scope or scope == namespace]


def forbidden_message(request: ApiRequest, user: str) -> str:
    """`Error from server (Forbidden): ...` exactly as kubectl prints the API server's Status."""
    qualified = f"{request.resource}.{request.group}" if request.group else request.resource
    subject = f'{qualified} "{request.name}"' if request.name else qualified
    where = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    return (f"Error from server (Forbidden): {subject} is forbidden: User \"{user}\" cannot {request.verb} "
            f"resource \"{request.full_resource}\" in API group \"{request.group}\" {where}")


def _groups_of(user: str) -> set[str]:
    groups = {"system:authenticated"}
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        groups |= {"system:serviceaccounts", f"system:serviceaccounts:{parts[2]}"}
    return groups


def load_rbac_dir(path: Path) -> list[dict[str, Any]]:
    """Every object in a bundle's `rbac/` directory (all YAML documents of all *.yaml files)."""
    objects: list[dict[str, Any]] = []
    for file in sorted(Path(path).glob("*.y*ml")):
        objects.extend(doc for doc in yaml.safe_load_all(file.read_text()) if isinstance(doc, dict))
    return objects


def rbac_namespace(objects: Sequence[Mapping[str, Any]]) -> str:
    """The namespace the agent's objects live in: the first one an object names (a bundle compiled
    before rbac/ left it to the install named `arenac`), else `arenac`, where the local cluster
    applies them."""
    for obj in objects:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace:
            return str(namespace)
    return DEFAULT_NAMESPACE


def agent_user(objects: Sequence[Mapping[str, Any]]) -> str:
    """The user the agent's requests carry: its ServiceAccount's, default arenac/arenac-agent."""
    for obj in objects:
        if obj.get("kind") == "ServiceAccount":
            meta = obj.get("metadata") or {}
            return service_account_user(meta.get("namespace") or rbac_namespace(objects), meta["name"])
    return AGENT_USER
