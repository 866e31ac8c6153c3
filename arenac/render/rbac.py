"""The agent's RBAC: a ServiceAccount, a Role and a RoleBinding, least privilege.

Rules come only from the access surface: one rule per (apiGroup, resource, names),
verbs sorted, resource names when the surface names them. Nothing else is granted.

The objects name no namespace: they take the install's (`kubectl apply -n NAMESPACE -f rbac/`, or
the runner's own apply, runner/kube/agent_access.py), and the RoleBinding's ServiceAccount subject,
without one too, is the binding's own namespace's account, as the API server reads it (its RBAC
authorizer defaults a RoleBinding subject's namespace to the binding's). So one compiled bundle
serves any trial namespace, and its bytes do not depend on where it runs.
"""

from __future__ import annotations

from arenac.model.access import AccessSurface

AGENT_SERVICE_ACCOUNT = "arenac-agent"
AGENT_ROLE = "arenac-agent"


def _labels(task: str, variant: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "arenac", "arenac.dev/task": task, "arenac.dev/variant": variant[-8:]}


def role_rules(surface: AccessSurface) -> list[dict]:
    merged: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for rule in surface.kube:
        key = (rule.api_group, rule.resource, tuple(sorted(rule.resource_names)))
        merged.setdefault(key, set()).update(rule.verbs)
    rules = []
    for (group, resource, names), verbs in sorted(merged.items()):
        entry = {"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs)}
        if names:
            entry["resourceNames"] = list(names)
        rules.append(entry)
    return rules


def rbac_objects(surface: AccessSurface, task: str, variant: str) -> list[dict]:
    labels = _labels(task, variant)
    objects: list[dict] = [{
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": AGENT_SERVICE_ACCOUNT, "labels": labels},
        "automountServiceAccountToken": bool(surface.kube),
    }]
    rules = role_rules(surface)
    if rules:
        objects.append({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": AGENT_ROLE, "labels": labels},
            "rules": rules,
        })
        objects.append({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": AGENT_ROLE, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AGENT_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT_SERVICE_ACCOUNT}],
        })
    return objects
