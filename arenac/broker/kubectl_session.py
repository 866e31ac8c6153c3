"""The state of one brokered kubectl call and what every command goes through: authorisation of
each API request by the bundle's RBAC (`need`, `may`) and object lookup on the LocalCluster.
The commands are in kubectl_read.py and kubectl_write.py; kubectl.py puts them together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arenac.broker.cluster import LocalCluster, not_found
from arenac.broker.kubeargs import (
    ResourceType,
    resource_type,
)
from arenac.broker.outcome import Denied, Failed
from arenac.broker.rbac import ApiRequest, Authorizer

PODS, LOG, EVENTS = resource_type("pods"), "log", resource_type("events")
WORKLOADS = ("deployments", "statefulsets")
KUBECTL_VERSION = "v1.30.0"


class KubectlSession:
    """One kubectl invocation's state: its namespace, the requests it was allowed, its output;
    the authorisation every command goes through and the objects it reads (make one per call)."""

    # per call, set by Kubectl.run before the command runs
    _checked: list[ApiRequest]  # the requests allowed so far, in order (the action record's reason)
    _edit: str | None  # what `edit` wrote, for the action record
    _out: list[str]
    _err: list[str]
    _ns: str  # the namespace the call addresses (-n, or the cluster's)
    _all_ns: bool  # -A

    def __init__(self, cluster: LocalCluster, authorizer: Authorizer, rbac_objects: Sequence[dict[str, Any]] = (),
                 max_wait: float = 600.0, exec_into: Sequence[str] = ()) -> None:
        self.cluster = cluster
        self.exec_into = tuple(exec_into)  # when set, exec only into these workloads (the surface's list)
        self.authz = authorizer
        self.rbac_objects = list(rbac_objects)
        self.max_wait = max_wait

    # -- authorisation -----------------------------------------------------------------------
    def _request(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> ApiRequest:
        namespace = "" if not rt.namespaced or (self._all_ns and not name) else self._ns
        return ApiRequest(verb, rt.group, rt.plural, sub, name, namespace)

    def need(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> None:
        request = self._request(verb, rt, name, sub)
        if not self.authz.allows(request):
            raise Denied(self.authz.forbidden(request))
        self._checked.append(request)

    def may(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> bool:
        return self.authz.allows(self._request(verb, rt, name, sub))

    # -- objects -----------------------------------------------------------------------------
    def _local(self) -> bool:
        return self._all_ns or self._ns == self.cluster.namespace

    def objects(self, rt: ResourceType) -> list[dict[str, Any]]:
        if rt.plural == "namespaces":
            return self.cluster.objects("namespaces") or []
        if not self._local():
            return []
        modelled = self.cluster.objects(rt.plural)
        if modelled is not None:
            return modelled
        return [obj for obj in self.rbac_objects if obj.get("kind") == rt.kind]

    def object(self, rt: ResourceType, name: str) -> dict[str, Any]:
        found = [obj for obj in self.objects(rt) if obj["metadata"]["name"] == name]
        if not found:
            raise not_found(rt.plural, rt.group, name)
        return found[0]

    def _pod_of(self, rt: ResourceType, name: str) -> str:
        """The pod kubectl picks for `TYPE/NAME` (logs, exec): get the object, list its pods."""
        if rt.plural == "pods":
            self.need("get", PODS, name)
            self.object(PODS, name)
            return name
        if rt.plural not in (*WORKLOADS, "services", "replicasets"):
            raise Failed(f"error: cannot attach to *v1.{rt.kind}: selector for *v1.{rt.kind} not implemented")
        self.need("get", rt, name)
        obj = self.object(rt, name)
        self.need("list", PODS)
        component = (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component", "")
        return self.cluster.pod_name(component)

