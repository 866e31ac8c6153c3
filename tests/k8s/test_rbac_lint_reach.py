"""The lint asks the one RBAC matcher whether a rule reaches roles, identities or secrets: a
`*/sub` resource over the group reaches them as Kubernetes would match it, on both sides."""

from __future__ import annotations

from typing import Any

from arenac.k8s.rbac_lint import lint_rbac

RBAC = "rbac.authorization.k8s.io"


def role(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "arenac"},
            "rules": list(rules)}


def grants(objects: list[dict[str, Any]], allow: frozenset[str] = frozenset()) -> list[str]:
    return sorted(p.grant or "" for p in lint_rbac(objects, allow))


def test_a_subresource_wildcard_in_the_rbac_group_reaches_roles() -> None:
    rule = {"apiGroups": [RBAC], "resources": ["*/status"], "verbs": ["*"]}
    assert grants([role(rule)], frozenset({"wildcard"})) == ["bind", "escalate"]
    assert grants([role({**rule, "apiGroups": ["apps"]})], frozenset({"wildcard"})) == []


def test_a_subresource_wildcard_in_the_core_group_reaches_secrets_and_identities() -> None:
    rule = {"apiGroups": [""], "resources": ["*/token"], "verbs": ["*"]}
    assert grants([role(rule)], frozenset({"wildcard"})) == ["impersonate", "secrets"]
    assert grants([role({**rule, "verbs": ["get"]})], frozenset({"wildcard"})) == ["secrets"]
    assert grants([role({**rule, "apiGroups": ["batch"]})], frozenset({"wildcard"})) == []


def test_a_named_wildcard_rule_still_reaches_what_it_names() -> None:
    rule = {"apiGroups": [RBAC], "resources": ["roles"], "verbs": ["*"], "resourceNames": ["mine"]}
    found = grants([role(rule)], frozenset({"wildcard"}))
    assert found == ["", "bind", "escalate"]  # "" the names that `*` ignores, never allowed
