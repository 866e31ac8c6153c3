"""Lower access definitions into `AccessSurface`s, checking every name.

Resources are Kubernetes resources (with their API group looked up, or given as
`deployments.apps`), optionally a subresource (`pods/log`) and resource names.
Grants the RBAC lint forbids by default (wildcards, secrets, escalate, bind,
impersonate, cluster scope) are errors unless the surface says `allow <grant>`; the grant
words, the escalating verbs and the verbs a name cannot restrict are `arenac.model.rbac`'s,
which the lint shares. Diagnostics come in the order of the surface's rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.model.access import AccessSurface, KubeRule
from arenac.model.rbac import ESCALATING_VERBS, GRANTS, VERBS_WITHOUT_NAMES
from arenac.model.substrate import Service, Substrate
from arenac.syntax import ast

# resource -> (api group, namespaced)
KUBE_RESOURCES: dict[str, tuple[str, bool]] = {
    "pods": ("", True),
    "services": ("", True),
    "endpoints": ("", True),
    "events": ("", True),
    "configmaps": ("", True),
    "secrets": ("", True),
    "persistentvolumeclaims": ("", True),
    "serviceaccounts": ("", True),
    "namespaces": ("", False),
    "nodes": ("", False),
    "deployments": ("apps", True),
    "statefulsets": ("apps", True),
    "replicasets": ("apps", True),
    "daemonsets": ("apps", True),
    "jobs": ("batch", True),
    "cronjobs": ("batch", True),
    "roles": ("rbac.authorization.k8s.io", True),
    "rolebindings": ("rbac.authorization.k8s.io", True),
    "networkpolicies": ("networking.k8s.io", True),
}
SUBRESOURCES = {"pods": ("log", "exec", "portforward", "attach", "status", "eviction"),
                "deployments": ("scale", "status"), "statefulsets": ("scale", "status"),
                "replicasets": ("scale", "status")}
KUBE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass
class _Surface:
    """The parts of one access surface, gathered rule by rule."""

    kube: list[KubeRule] = field(default_factory=list)
    exec_into: list[str] = field(default_factory=list)
    admin: dict[str, list[str]] = field(default_factory=dict)
    db_role: str | None = None
    sources: list[str] = field(default_factory=list)

    def build(self, name: str, allow: list[str]) -> AccessSurface:
        kube = list(self.kube)
        if self.exec_into and not any(r.resource == "pods/exec" for r in kube):
            # exec needs pods/exec create and pod lookup; a surface that names workloads gets exactly that
            kube.append(KubeRule(api_group="", resource="pods", verbs=("get", "list")))
            kube.append(KubeRule(api_group="", resource="pods/exec", verbs=("create", "get")))
        return AccessSurface(
            name=name,
            kube=tuple(kube),
            exec_into=tuple(self.exec_into),
            admin=tuple((service, tuple(paths)) for service, paths in sorted(self.admin.items())),
            db_role=self.db_role,
            source_paths=tuple(self.sources),
            allow=tuple(sorted(set(allow))),
        )


def lower_access(defn: ast.AccessDef, substrate: Substrate, errors: Collector) -> AccessSurface | None:
    """The surface `defn` grants, or None (with every problem reported) when a rule is wrong."""
    before = len(errors.items)
    allow = _allowed(defn, errors)
    parts = _Surface()
    services = {s.name: s for s in substrate.services}
    for rule in defn.rules:
        match rule:
            case ast.KubeRule():
                parts.kube.extend(_kube_rule(rule, allow, errors))
            case ast.ExecRule():
                _exec_rule(rule, services, parts, errors)
            case ast.AdminRule():
                _admin_rule(rule, services, parts, errors)
            case ast.DbRule():
                _db_rule(rule, substrate, parts, errors)
            case ast.SourceRule():
                _source_rule(rule, parts, errors)
            case ast.Use():
                errors.error("E0212", "`use` is not allowed inside an access surface", rule.span)
            case ast.AllowRule():
                pass  # read first, by _allowed: a grant admits rules written before it too
    if len(errors.items) > before:
        return None
    return parts.build(defn.name.text, allow)


def _allowed(defn: ast.AccessDef, errors: Collector) -> list[str]:
    """Every word of the surface's `allow` rules, in order; an unknown one is reported (E0203)."""
    allow: list[str] = []
    for rule in defn.rules:
        if isinstance(rule, ast.AllowRule):
            for grant in rule.grants:
                if grant.text not in GRANTS:
                    errors.error("E0203", f"unknown grant '{grant.text}'", grant.span, did_you_mean(grant.text, GRANTS))
                allow.append(grant.text)
    return allow


def _exec_rule(rule: ast.ExecRule, services: dict[str, Service], parts: _Surface, errors: Collector) -> None:
    for workload in rule.workloads:
        if workload.text not in services:
            errors.error("E0203", f"unknown workload '{workload.text}'", workload.span,
                         did_you_mean(workload.text, services))
        elif workload.text not in parts.exec_into:
            parts.exec_into.append(workload.text)


def _admin_rule(rule: ast.AdminRule, services: dict[str, Service], parts: _Surface, errors: Collector) -> None:
    service = services.get(rule.service.text)
    if service is None:
        errors.error("E0203", f"unknown service '{rule.service.text}'", rule.service.span,
                     did_you_mean(rule.service.text, services))
        return
    for path in rule.paths:
        if path.text not in service.admin_paths:
            errors.error("E0203", f"service '{service.name}' has no admin path '{path.text}'", path.span,
                         did_you_mean(path.text, service.admin_paths))
        else:
            parts.admin.setdefault(service.name, []).append(path.text)


def _db_rule(rule: ast.DbRule, substrate: Substrate, parts: _Surface, errors: Collector) -> None:
    if rule.role.text not in substrate.db_roles:
        errors.error("E0203", f"unknown database role '{rule.role.text}'", rule.role.span,
                     did_you_mean(rule.role.text, substrate.db_roles))
    elif parts.db_role is not None:
        errors.error("E0208", "an access surface has one database role", rule.span)
    else:
        parts.db_role = rule.role.text


def _source_rule(rule: ast.SourceRule, parts: _Surface, errors: Collector) -> None:
    for source in rule.paths:
        if source.value.startswith("/") or ".." in source.value.split("/"):
            errors.error("E0306", f"source path '{source.value}' must be relative and inside the tree", source.span)
        else:
            parts.sources.append(source.value)


def _kube_rule(rule: ast.KubeRule, allow: list[str], errors: Collector) -> list[KubeRule]:
    verbs = _kube_verbs(rule, allow, errors)
    rules = [_kube_resource(ref, verbs, allow, errors) for ref in rule.resources]
    return [kube for kube in rules if kube is not None and verbs]


def _kube_verbs(rule: ast.KubeRule, allow: list[str], errors: Collector) -> list[str]:
    """The rule's verbs that are known and granted; each other one is reported."""
    verbs: list[str] = []
    for verb in rule.verbs:
        if verb.text in ESCALATING_VERBS:
            if verb.text not in allow:
                errors.error("E0404", f"verb '{verb.text}' lets the agent escalate its privileges", verb.span,
                             f"add `allow {verb.text}` if the task really needs it")
                continue
        elif verb.text not in KUBE_VERBS:
            errors.error("E0203", f"unknown verb '{verb.text}'", verb.span, did_you_mean(verb.text, KUBE_VERBS))
            continue
        verbs.append(verb.text)
    return verbs


def _kube_resource(ref: ast.ResourceRef, verbs: list[str], allow: list[str], errors: Collector) -> KubeRule | None:
    """The grant of `verbs` on one resource of a rule, or None (reported) when it may not be had."""
    resource = ref.resource.text
    known = KUBE_RESOURCES.get(resource)
    if known is None:
        errors.error("E0203", f"unknown resource '{resource}'", ref.resource.span,
                     did_you_mean(resource, KUBE_RESOURCES))
        return None
    group, namespaced = known
    if ref.api_group is not None and ref.api_group != group:
        errors.error("E0302", f"resource '{resource}' is in API group '{group or 'core'}', not '{ref.api_group}'",
                     ref.span)
        return None
    if resource == "secrets" and "secrets" not in allow:
        errors.error("E0404", "access to secrets is not granted by default", ref.span,
                     "add `allow secrets` if the task really needs it")
        return None
    if not namespaced and "cluster" not in allow:
        errors.error("E0404", f"'{resource}' is cluster-scoped", ref.span,
                     "add `allow cluster` if the task really needs it")
        return None
    name = resource
    if ref.subresource is not None:
        subs = SUBRESOURCES.get(resource, ())
        if ref.subresource.text not in subs:
            errors.error("E0203", f"'{resource}' has no subresource '{ref.subresource.text}'", ref.subresource.span,
                         did_you_mean(ref.subresource.text, subs))
            return None
        name = f"{resource}/{ref.subresource.text}"
    names = tuple(n.text for n in ref.names)
    if names and any(v in VERBS_WITHOUT_NAMES for v in verbs):
        errors.error("E0405", f"verbs {', '.join(verbs)} cannot be limited to named {resource}", ref.span,
                     "Kubernetes ignores resourceNames for list, watch, create and deletecollection; "
                     "give them their own line without names")
        return None
    return KubeRule(api_group=group, resource=name, verbs=tuple(verbs), resource_names=names)
