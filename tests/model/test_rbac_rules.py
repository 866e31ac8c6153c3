"""arenac.model.rbac, the one RBAC matcher: every matching rule on both sides, with the edge
cases of the four implementations it replaced (the access surface's exact match, the broker's
authorizer, the lint's reach test and lowering's name check)."""

from __future__ import annotations

import pytest

from arenac.k8s.rbac_lint import GRANTS as LINT_GRANTS
from arenac.model.access import KubeNeed, KubeRule
from arenac.model.rbac import GRANTS, PolicyRule, ResourceRequest


def rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> PolicyRule:
    return PolicyRule.from_manifest({"verbs": verbs, "apiGroups": groups, "resources": resources,
                                     **({"resourceNames": names} if names is not None else {})})


def req(verb: str, resource: str, name: str = "", group: str = "") -> ResourceRequest:
    return ResourceRequest.of(verb, group, resource, name)


# ---- verbs ---------------------------------------------------------------------------------------


def test_a_verb_matches_itself_or_the_wildcard() -> None:
    assert rule(["get", "list"], [""], ["pods"]).allows(req("list", "pods"))
    assert not rule(["get", "list"], [""], ["pods"]).allows(req("delete", "pods", "p"))
    assert rule(["*"], [""], ["pods"]).allows(req("delete", "pods", "p"))
    assert not rule([], [""], ["pods"]).allows(req("get", "pods", "p"))  # no verbs: nothing


# ---- API groups ------------------------------------------------------------------------------------


def test_a_group_matches_itself_or_the_wildcard_and_core_is_the_empty_group() -> None:
    apps = rule(["get"], ["apps"], ["deployments"])
    assert apps.allows(req("get", "deployments", "d", "apps"))
    assert not apps.allows(req("get", "deployments", "d"))  # the core group is not apps
    assert not apps.allows(req("get", "deployments", "d", "extensions"))
    assert rule(["get"], ["*"], ["deployments"]).allows(req("get", "deployments", "d", "extensions"))
    assert not rule(["get"], [""], ["deployments"]).allows(req("get", "deployments", "d", "apps"))


# ---- resources and subresources ---------------------------------------------------------------------


def test_a_resource_does_not_cover_its_subresources_nor_they_it() -> None:
    pods = rule(["get", "create"], [""], ["pods"])
    assert pods.allows(req("get", "pods", "p"))
    assert not pods.allows(req("get", "pods/log", "p"))
    assert not pods.allows(req("create", "pods/exec", "p"))
    logs = rule(["get"], [""], ["pods/log"])
    assert logs.allows(req("get", "pods/log", "p"))
    assert not logs.allows(req("get", "pods", "p"))
    assert not logs.allows(req("get", "pods/exec", "p"))


def test_the_resource_wildcard_covers_every_resource_and_subresource() -> None:
    everything = rule(["get"], [""], ["*"])
    assert everything.allows(req("get", "secrets", "s"))
    assert everything.allows(req("get", "pods/log", "p"))


def test_star_slash_sub_covers_that_subresource_of_any_resource_only() -> None:
    scale = rule(["patch"], ["apps"], ["*/scale"])
    assert scale.allows(req("patch", "deployments/scale", "d", "apps"))
    assert scale.allows(req("patch", "statefulsets/scale", "s", "apps"))
    assert not scale.allows(req("patch", "deployments", "d", "apps"))
    assert not scale.allows(req("patch", "deployments/status", "d", "apps"))


def test_resource_slash_star_is_no_pattern_in_rbac() -> None:
    # Kubernetes' ResourceMatches knows `*` and `*/sub`; `pods/*` matches only a literal `pods/*`
    assert not rule(["get"], [""], ["pods/*"]).allows(req("get", "pods/log", "p"))
    assert not rule(["get"], [""], ["pods/*"]).allows(req("get", "pods", "p"))


def test_a_request_names_its_subresource_after_a_slash() -> None:
    request = ResourceRequest.of("patch", "apps", "deployments/scale", "d")
    assert (request.resource, request.subresource, request.full_resource) == ("deployments", "scale",
                                                                              "deployments/scale")
    assert ResourceRequest.of("list", "", "pods", None) == ResourceRequest("list", "", "pods", "", "")


# ---- resource names ---------------------------------------------------------------------------------


def test_resource_names_restrict_named_requests() -> None:
    named = rule(["get", "patch"], [""], ["configmaps"], ["a", "b"])
    assert named.allows(req("get", "configmaps", "a")) and named.allows(req("patch", "configmaps", "b"))
    assert not named.allows(req("get", "configmaps", "c"))


def test_a_named_rule_never_grants_an_unnamed_request() -> None:
    named = rule(["list", "create"], [""], ["configmaps"], ["a"])
    assert not named.allows(req("list", "configmaps"))
    assert not named.allows(req("create", "configmaps"))
    assert named.allows(req("list", "configmaps", "a"))  # a list narrowed to the name (field selector)


def test_an_unnamed_rule_grants_every_name_and_none() -> None:
    unnamed = rule(["get", "list"], [""], ["configmaps"])
    assert unnamed.allows(req("get", "configmaps", "anything"))
    assert unnamed.allows(req("list", "configmaps"))


@pytest.mark.parametrize("verb", ["list", "watch", "create", "deletecollection", "*"])
def test_verbs_a_name_cannot_restrict_are_found_in_a_named_rule(verb: str) -> None:
    assert rule([verb, "get"], [""], ["configmaps"], ["a"]).unrestricted_by_names() == (verb,)
    assert rule([verb, "get"], [""], ["configmaps"]).unrestricted_by_names() == ()  # no names: nothing to say


def test_verbs_a_name_restricts_are_not_found() -> None:
    assert rule(["get", "patch", "update", "delete"], [""], ["configmaps"], ["a"]).unrestricted_by_names() == ()


# ---- reach: can the rule touch a resource at all -------------------------------------------------------


@pytest.mark.parametrize("pattern", ["roles", "roles/status", "*", "*/status"])
def test_a_rule_reaches_a_resource_through_itself_a_subresource_or_a_wildcard(pattern: str) -> None:
    assert rule(["get"], ["rbac.authorization.k8s.io"], [pattern]).reaches(["rbac.authorization.k8s.io"], ["roles"])
    assert rule(["get"], ["*"], [pattern]).reaches(["rbac.authorization.k8s.io"], ["roles"])


def test_a_rule_does_not_reach_another_resource_or_group() -> None:
    assert not rule(["*"], ["rbac.authorization.k8s.io"], ["rolebindings"]).reaches(
        ["rbac.authorization.k8s.io"], ["roles", "clusterroles"])
    assert not rule(["*"], ["rbac.authorization.k8s.io"], ["rolesx"]).reaches(["rbac.authorization.k8s.io"], ["roles"])
    assert not rule(["*"], ["apps"], ["*"]).reaches([""], ["secrets"])


def test_reach_ignores_resource_names() -> None:
    assert rule(["*"], [""], ["secrets"], ["only-this"]).reaches([""], ["secrets"])


# ---- reading rules as YAML gives them --------------------------------------------------------------


def test_a_rule_is_read_from_its_manifest_fields() -> None:
    parsed = PolicyRule.from_manifest({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                                       "resourceNames": ["p"], "nonResourceURLs": ["/healthz"]})
    assert parsed == PolicyRule(("get",), ("",), ("pods",), ("p",), ("/healthz",))


def test_a_field_that_is_not_a_list_is_read_as_empty_not_as_characters() -> None:
    parsed = PolicyRule.from_manifest({"verbs": "get", "apiGroups": None, "resources": ["pods"]})
    assert parsed.verbs == () and parsed.api_groups == ()
    assert not parsed.allows(req("get", "pods", "p"))  # what it does not say, it does not grant
    assert PolicyRule.from_manifest("not a rule") == PolicyRule((), (), ())


# ---- the access surface's rules decide through the same matcher -------------------------------------


def test_an_access_surface_rule_permits_what_its_rbac_rule_allows() -> None:
    scale = KubeRule(api_group="apps", resource="deployments/scale", verbs=("patch",), resource_names=("d",))
    assert scale.policy() == PolicyRule(("patch",), ("apps",), ("deployments/scale",), ("d",))
    assert scale.permits(KubeNeed(api_group="apps", resource="deployments/scale", verb="patch", name="d"))
    assert not scale.permits(KubeNeed(api_group="apps", resource="deployments/scale", verb="patch", name="e"))
    assert not scale.permits(KubeNeed(api_group="apps", resource="deployments/scale", verb="patch"))  # no name
    assert not scale.permits(KubeNeed(api_group="apps", resource="deployments", verb="patch", name="d"))
    assert not scale.permits(KubeNeed(api_group="", resource="deployments/scale", verb="patch", name="d"))
    pods = KubeRule(api_group="", resource="pods", verbs=("list", "delete"))
    assert pods.permits(KubeNeed(api_group="", resource="pods", verb="list"))
    assert not pods.permits(KubeNeed(api_group="", resource="pods", verb="patch", name="p"))


def test_lowering_and_the_lint_share_one_vocabulary_of_grants() -> None:
    assert frozenset(GRANTS) == LINT_GRANTS
    assert len(GRANTS) == len(set(GRANTS)) == 6
