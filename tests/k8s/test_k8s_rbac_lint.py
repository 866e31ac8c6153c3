"""lint_rbac: every rule has a failing case and a passing one."""

from __future__ import annotations

import pytest

from arenac.k8s.rbac_lint import GRANTS, RbacProblem, lint_rbac

RBAC = "rbac.authorization.k8s.io/v1"
NAMED_PATCH = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app-config"],
               "verbs": ["get", "patch"]}


def role(*rules: dict, kind: str = "Role", name: str = "agent") -> dict:
    return {"apiVersion": RBAC, "kind": kind, "metadata": {"name": name, "namespace": "shop"}, "rules": list(rules)}


def binding(ref_kind: str, kind: str = "RoleBinding", name: str = "agent") -> dict:
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": {"name": name, "namespace": "shop"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": "agent"},
        "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": "shop"}],
    }


def grants(problems: list[RbacProblem]) -> list[str | None]:
    return [p.grant for p in problems]


def test_least_privilege_role_and_binding_pass() -> None:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "agent"}}
    assert lint_rbac([sa, role(NAMED_PATCH), binding("Role")]) == []


@pytest.mark.parametrize(
    "rule",
    [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]},
        {"apiGroups": ["*"], "resources": ["configmaps"], "verbs": ["get"]},
    ],
    ids=["verbs", "subresources", "apiGroups"],
)
def test_wildcard_fails_and_passes_with_grant(rule: dict) -> None:
    [problem] = lint_rbac([role(rule)])
    assert (problem.kind, problem.name, problem.rule, problem.grant) == ("Role", "agent", 0, "wildcard")
    assert "wildcard" in problem.message
    assert lint_rbac([role(rule)], allow=frozenset({"wildcard"})) == []


def test_resource_wildcard_over_core_group_also_reaches_secrets() -> None:
    rule = {"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}
    assert grants(lint_rbac([role(rule)])) == ["secrets", "wildcard"]
    # Allowing the wildcard alone does not let secrets through.
    assert grants(lint_rbac([role(rule)], allow=frozenset({"wildcard"}))) == ["secrets"]
    assert lint_rbac([role(rule)], allow=frozenset({"wildcard", "secrets"})) == []


def test_secrets_fail_and_pass_with_grant() -> None:
    rule = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["db"], "verbs": ["get"]}
    assert lint_rbac([role(NAMED_PATCH, rule)]) == [
        RbacProblem("Role", "agent", 1, "grants access to secrets", "secrets")]
    assert lint_rbac([role(NAMED_PATCH, rule)], allow=frozenset({"secrets"})) == []


@pytest.mark.parametrize(
    ("verb", "resources", "group"),
    [
        ("escalate", ["roles"], "rbac.authorization.k8s.io"),
        ("bind", ["clusterroles"], "rbac.authorization.k8s.io"),
        ("impersonate", ["serviceaccounts"], ""),
        ("impersonate:serviceaccount", ["serviceaccounts"], "authentication.k8s.io"),
    ],
)
def test_dangerous_verbs_fail_and_pass_with_grant(verb: str, resources: list[str], group: str) -> None:
    word = verb.split(":")[0]
    rule = {"apiGroups": [group], "resources": resources, "verbs": ["get", verb]}
    [problem] = lint_rbac([role(rule)])
    assert (problem.rule, problem.grant, problem.message) == (0, word, f"grants the verb {verb}")
    assert lint_rbac([role(rule)], allow=frozenset({word})) == []
    # Another grant word does not help.
    other = next(iter(sorted(GRANTS - {word})))
    assert grants(lint_rbac([role(rule)], allow=frozenset({other}))) == [word]


def test_verb_wildcard_implies_escalate_and_bind_on_roles_only() -> None:
    on_roles = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["*"]}
    assert grants(lint_rbac([role(on_roles)], allow=frozenset({"wildcard"}))) == ["bind", "escalate"]
    on_configmaps = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}
    assert lint_rbac([role(on_configmaps)], allow=frozenset({"wildcard"})) == []


def test_cluster_role_fails_and_passes_with_grant() -> None:
    cluster_role = role({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}, kind="ClusterRole")
    assert lint_rbac([cluster_role]) == [
        RbacProblem("ClusterRole", "agent", None, "is a ClusterRole: its grants reach every namespace", "cluster")
    ]
    assert lint_rbac([cluster_role], allow=frozenset({"cluster"})) == []


def test_cluster_role_binding_fails_and_passes_with_grant() -> None:
    problems = lint_rbac([binding("ClusterRole", kind="ClusterRoleBinding")])
    assert [(p.kind, p.rule, p.grant) for p in problems] == [("ClusterRoleBinding", None, "cluster")]
    assert lint_rbac([binding("ClusterRole", kind="ClusterRoleBinding")], allow=frozenset({"cluster"})) == []


def test_role_binding_to_cluster_role_fails_and_passes_with_grant() -> None:
    assert lint_rbac([binding("ClusterRole")]) == [
        RbacProblem("RoleBinding", "agent", None, "references the ClusterRole 'agent'", "cluster")
    ]
    assert lint_rbac([binding("ClusterRole")], allow=frozenset({"cluster"})) == []
    assert lint_rbac([binding("Role")]) == []


@pytest.mark.parametrize("verb", ["list", "watch", "create", "deletecollection", "*"])
def test_resource_names_with_unnamed_verb_always_fails(verb: str) -> None:
    rule = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app-config"], "verbs": ["get", verb]}
    problems = lint_rbac([role(rule)], allow=GRANTS)
    assert [(p.rule, p.grant) for p in problems] == [(0, None)]
    assert f"ignores them for {verb}" in problems[0].message
    # The same verbs without resourceNames say what they grant, so they pass.
    unnamed = {key: value for key, value in rule.items() if key != "resourceNames"}
    assert lint_rbac([role(unnamed)], allow=frozenset({"wildcard"})) == []


def test_non_rbac_objects_are_ignored() -> None:
    lookalike = {"apiVersion": "example.com/v1", "kind": "Role", "metadata": {"name": "x"}, "rules": [{"verbs": ["*"]}]}
    assert lint_rbac([lookalike]) == []


def test_problems_are_sorted_and_unknown_grant_is_refused() -> None:
    wildcard_group = {"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}
    secrets = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
    objects = [
        role(wildcard_group, secrets, name="b"),
        binding("ClusterRole", name="a"),
        role(secrets, NAMED_PATCH, kind="ClusterRole", name="c"),
    ]
    problems = lint_rbac(objects)
    # Object-level problems first, then by rule index, whatever the messages say.
    assert [(p.kind, p.name, p.rule, p.grant) for p in problems] == [
        ("ClusterRole", "c", None, "cluster"),
        ("ClusterRole", "c", 0, "secrets"),
        ("Role", "b", 0, "wildcard"),
        ("Role", "b", 1, "secrets"),
        ("RoleBinding", "a", None, "cluster"),
    ]
    with pytest.raises(ValueError, match="unknown RBAC grant"):
        lint_rbac(objects, allow=frozenset({"secret"}))
