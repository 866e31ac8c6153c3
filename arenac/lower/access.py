"""Lower access definitions into `AccessSurface`s, checking every name.

Resources are Kubernetes resources (with their API group looked up, or given as
`deployments.apps`), optionally a subresource (`pods/log`) and resource names.
Grants the RBAC lint forbids by default (wildcards, secrets, escalate, bind,
impersonate, cluster scope) are errors unless the surface says `allow <grant>`.
"""

from __future__ import annotations

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.model.access import AccessSurface, KubeRule
from arenac.model.substrate import Substrate
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
ESCALATING_VERBS = ("escalate", "bind", "impersonate")
EXPLICIT_GRANTS = ("secrets", "cluster", "escalate", "bind", "impersonate", "wildcard")


def lower_access(defn: ast.AccessDef, substrate: Substrate, errors: Collector) -> AccessSurface | None:
    before = len(errors.items)
    allow: list[str] = []
    for rule in defn.rules:
        if isinstance(rule, ast.AllowRule):
            for grant in rule.grants:
                if grant.text not in EXPLICIT_GRANTS:
                    errors.error("E0203", f"unknown grant '{grant.text}'", grant.span,
                                 did_you_mean(grant.text, EXPLICIT_GRANTS))
                allow.append(grant.text)
    kube: list[KubeRule] = []
    exec_into: list[str] = []
    admin: dict[str, list[str]] = {}
    db_role = None
    sources: list[str] = []
    services = {s.name: s for s in substrate.services}
    for rule in defn.rules:
        if isinstance(rule, ast.KubeRule):
            kube.extend(_kube_rule(rule, allow, errors))
        elif isinstance(rule, ast.ExecRule):
            for workload in rule.workloads:
                if workload.text not in services:
                    errors.error("E0203", f"unknown workload '{workload.text}'", workload.span,
                                 did_you_mean(workload.text, services))
                elif workload.text not in exec_into:
                    exec_into.append(workload.text)
        elif isinstance(rule, ast.AdminRule):
            service = services.get(rule.service.text)
            if service is None:
                errors.error("E0203", f"unknown service '{rule.service.text}'", rule.service.span,
                             did_you_mean(rule.service.text, services))
                continue
            for path in rule.paths:
                if path.text not in service.admin_paths:
                    errors.error("E0203", f"service '{service.name}' has no admin path '{path.text}'", path.span,
                                 did_you_mean(path.text, service.admin_paths))
                else:
                    admin.setdefault(service.name, []).append(path.text)
        elif isinstance(rule, ast.DbRule):
            if rule.role.text not in substrate.db_roles:
                errors.error("E0203", f"unknown database role '{rule.role.text}'", rule.role.span,
                             did_you_mean(rule.role.text, substrate.db_roles))
            elif db_role is not None:
                errors.error("E0208", "an access surface has one database role", rule.span)
            else:
                db_role = rule.role.text
        elif isinstance(rule, ast.SourceRule):
            for source in rule.paths:
                if source.value.startswith("/") or ".." in source.value.split("/"):
                    errors.error("E0306", f"source path '{source.value}' must be relative and inside the tree",
                                 source.span)
                else:
                    sources.append(source.value)
        elif isinstance(rule, ast.Use):
            errors.error("E0212", "`use` is not allowed inside an access surface", rule.span)
    if len(errors.items) > before:
        return None
    if exec_into and not any(r.resource == "pods/exec" for r in kube):
        # exec needs pods/exec create and pod lookup; a surface that names workloads gets exactly that
        kube.append(KubeRule(api_group="", resource="pods", verbs=("get", "list")))
        kube.append(KubeRule(api_group="", resource="pods/exec", verbs=("create", "get")))
    return AccessSurface(
        name=defn.name.text,
        kube=tuple(kube),
        exec_into=tuple(exec_into),
        admin=tuple((name, tuple(paths)) for name, paths in sorted(admin.items())),
        db_role=db_role,
        source_paths=tuple(sources),
        allow=tuple(sorted(set(allow))),
    )


def _kube_rule(rule: ast.KubeRule, allow: list[str], errors: Collector) -> list[KubeRule]:
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
    rules = []
    for ref in rule.resources:
        resource = ref.resource.text
        known = KUBE_RESOURCES.get(resource)
        if known is None:
            errors.error("E0203", f"unknown resource '{resource}'", ref.resource.span,
                         did_you_mean(resource, KUBE_RESOURCES))
            continue
        group, namespaced = known
        if ref.api_group is not None and ref.api_group != group:
            errors.error("E0302", f"resource '{resource}' is in API group '{group or 'core'}', not '{ref.api_group}'",
                         ref.span)
            continue
        if resource == "secrets" and "secrets" not in allow:
            errors.error("E0404", "access to secrets is not granted by default", ref.span,
                         "add `allow secrets` if the task really needs it")
            continue
        if not namespaced and "cluster" not in allow:
            errors.error("E0404", f"'{resource}' is cluster-scoped", ref.span,
                         "add `allow cluster` if the task really needs it")
            continue
        name = resource
        if ref.subresource is not None:
            subs = SUBRESOURCES.get(resource, ())
            if ref.subresource.text not in subs:
                errors.error("E0203", f"'{resource}' has no subresource '{ref.subresource.text}'", ref.subresource.span,
                             did_you_mean(ref.subresource.text, subs))
                continue
            name = f"{resource}/{ref.subresource.text}"
        names = tuple(n.text for n in ref.names)
        if names and any(v in ("list", "watch", "create", "deletecollection") for v in verbs):
            errors.error("E0405", f"verbs {', '.join(verbs)} cannot be limited to named {resource}", ref.span,
                         "Kubernetes ignores resourceNames for list, watch, create and deletecollection; "
                         "give them their own line without names")
            continue
        if verbs:
            rules.append(KubeRule(api_group=group, resource=name, verbs=tuple(verbs), resource_names=names))
    return rules
