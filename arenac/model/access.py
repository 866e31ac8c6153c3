"""Access surfaces: what an agent may do, and what an action needs.

Kubernetes permissions follow RBAC semantics (apiGroups, resources with optional
subresource, resourceNames, verbs), decided by `arenac.model.rbac`, the one RBAC matcher.
Admin API paths, a database role and exec into named workloads are the brokered,
non-Kubernetes parts of a surface.
"""

from __future__ import annotations

from typing import Literal

from arenac.model.base import Model
from arenac.model.rbac import PolicyRule, ResourceRequest


class KubeRule(Model):
    api_group: str
    resource: str  # may carry a subresource: "pods/log"
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def policy(self) -> PolicyRule:
        """The RBAC rule this grant becomes (one group, one resource)."""
        return PolicyRule(verbs=self.verbs, api_groups=(self.api_group,), resources=(self.resource,),
                          resource_names=self.resource_names)

    def permits(self, need: KubeNeed) -> bool:
        return self.policy().allows(need.request())


class AccessSurface(Model):
    name: str
    kube: tuple[KubeRule, ...] = ()
    exec_into: tuple[str, ...] = ()
    admin: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (service, paths)
    db_role: str | None = None
    source_paths: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()  # explicit grants the RBAC lint would otherwise reject

    def admin_paths(self, service: str) -> tuple[str, ...]:
        return next((paths for name, paths in self.admin if name == service), ())

    @property
    def uses_kubectl(self) -> bool:
        return bool(self.kube) or bool(self.exec_into)


class KubeNeed(Model):
    kind: Literal["kube"] = "kube"
    api_group: str
    resource: str
    verb: str
    name: str | None = None

    def request(self) -> ResourceRequest:
        return ResourceRequest.of(self.verb, self.api_group, self.resource, self.name)

    def describe(self) -> str:
        group = f".{self.api_group}" if self.api_group else ""
        target = f"{self.resource}{group}" + (f"/{self.name}" if self.name else "")
        return f"{self.verb} on {target}"


class AdminNeed(Model):
    kind: Literal["admin"] = "admin"
    service: str
    path: str

    def describe(self) -> str:
        return f"admin API {self.service}:{self.path}"


class DbNeed(Model):
    kind: Literal["db"] = "db"
    role: str

    def describe(self) -> str:
        return f"database role {self.role}"


class ExecNeed(Model):
    kind: Literal["exec"] = "exec"
    workload: str

    def describe(self) -> str:
        return f"exec into {self.workload}"


Need = KubeNeed | AdminNeed | DbNeed | ExecNeed


class Channel(Model):
    """One way of carrying out an action, with everything it needs."""

    name: Literal["kubectl", "admin_api", "db_role", "exec"]
    needs: tuple[Need, ...]
