"""The RBAC authorizer on its own: Kubernetes' matching rules and the API server's Forbidden wording."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arenac.broker.rbac import ApiRequest, Authorizer, agent_user, forbidden_message, load_rbac_dir, rbac_namespace
from arenac.render.rbac import rbac_objects
from broker.brokered import USER, profile, role, rule


def req(verb: str, resource: str, name: str = "", group: str = "", namespace: str = "arenac") -> ApiRequest:
    resource, _, sub = resource.partition("/")
    return ApiRequest(verb, group, resource, sub, name, namespace)


def test_forbidden_wording_matches_the_api_server() -> None:
    assert forbidden_message(req("patch", "configmaps", "spine-message-config"), USER) == (
        'Error from server (Forbidden): configmaps "spine-message-config" is forbidden: User '
        '"system:serviceaccount:arenac:arenac-agent" cannot patch resource "configmaps" in API group "" '
        'in the namespace "arenac"')
    assert forbidden_message(req("list", "pods"), USER) == (
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:arenac:arenac-agent" '
        'cannot list resource "pods" in API group "" in the namespace "arenac"')
    # the qualified resource carries the group and never the subresource; the resource carries both
    assert forbidden_message(req("patch", "deployments/scale", "spine-redis", "apps"), USER) == (
        'Error from server (Forbidden): deployments.apps "spine-redis" is forbidden: User '
        '"system:serviceaccount:arenac:arenac-agent" cannot patch resource "deployments/scale" in API group '
        '"apps" in the namespace "arenac"')
    assert forbidden_message(req("list", "nodes", namespace=""), USER).endswith(
        'cannot list resource "nodes" in API group "" at the cluster scope')


def test_resource_names_restrict_named_requests_and_never_grant_unnamed_ones() -> None:
    authz = Authorizer(role(rule([""], ["configmaps"], ["get", "list"], ["spine-message-config"])))
    assert authz.allows(req("get", "configmaps", "spine-message-config"))
    assert not authz.allows(req("get", "configmaps", "spine-auth-config"))
    assert not authz.allows(req("list", "configmaps"))  # a plain list carries no name
    # a list narrowed by a metadata.name field selector carries the name, as on the API server
    assert authz.allows(req("list", "configmaps", "spine-message-config"))
    assert not authz.allows(req("patch", "configmaps", "spine-message-config"))


def test_subresources_are_separate_resources() -> None:
    authz = Authorizer(role(rule([""], ["pods"], ["get", "list", "create"]), rule(["apps"], ["*/scale"], ["patch"])))
    assert authz.allows(req("get", "pods", "p"))
    assert not authz.allows(req("get", "pods/log", "p"))
    assert not authz.allows(req("create", "pods/exec", "p"))
    assert authz.allows(req("patch", "deployments/scale", "d", "apps"))
    assert authz.allows(req("patch", "statefulsets/scale", "s", "apps"))
    assert not authz.allows(req("patch", "deployments", "d", "apps"))
    logs_only = Authorizer(role(rule([""], ["pods/log"], ["get"])))
    assert logs_only.allows(req("get", "pods/log", "p")) and not logs_only.allows(req("get", "pods", "p"))


def test_api_groups_verbs_and_wildcards() -> None:
    authz = Authorizer(role(rule(["apps"], ["deployments"], ["get"]), rule([""], ["*"], ["watch"]),
                            rule(["*"], ["statefulsets"], ["*"])))
    assert authz.allows(req("get", "deployments", "d", "apps"))
    assert not authz.allows(req("get", "deployments", "d", "extensions"))
    assert not authz.allows(req("get", "deployments", "d"))  # core group is not apps
    assert authz.allows(req("watch", "secrets")) and not authz.allows(req("watch", "deployments", group="apps"))
    assert authz.allows(req("delete", "statefulsets", "s", "apps"))
    assert not authz.allows(req("delete", "statefulsets/scale", "s", "apps"))  # "x" does not cover "x/sub"


def test_bindings_decide_where_and_for_whom() -> None:
    namespaced = Authorizer(role(rule([""], ["pods"], ["list"])))
    assert namespaced.allows(req("list", "pods"))
    assert not namespaced.allows(req("list", "pods", namespace="kube-system"))
    assert not namespaced.allows(req("list", "pods", namespace=""))
    cluster = Authorizer(role(rule([""], ["pods", "nodes"], ["list"]), kind="ClusterRole"))
    assert cluster.allows(req("list", "pods", namespace="kube-system"))
    assert cluster.allows(req("list", "nodes", namespace=""))
    someone_else = Authorizer(role(rule([""], ["pods"], ["list"])), user="system:serviceaccount:arenac:other")
    assert not someone_else.allows(req("list", "pods"))
    objects = role(rule([""], ["pods"], ["list"]))
    objects[1]["subjects"] = [{"kind": "Group", "name": "system:serviceaccounts:arenac"}]
    assert Authorizer(objects).allows(req("list", "pods"))


def test_library_profiles_render_to_the_expected_grants(tmp_path: Path) -> None:
    scoped = Authorizer(rbac_objects(profile("scoped_kubectl"), "t", "t-00000000"))
    assert scoped.allows(req("patch", "deployments/scale", "spine-message", "apps"))
    assert not scoped.allows(req("patch", "deployments/scale", "spine-redis", "apps"))
    assert not scoped.allows(req("create", "pods/exec", "spine-message-1"))
    shell = Authorizer(rbac_objects(profile("shell"), "t", "t-00000000"))
    assert shell.allows(req("create", "pods/exec", "spine-postgres-0"))
    assert not shell.allows(req("delete", "pods", "spine-postgres-0"))
    confined = rbac_objects(profile("confined"), "t", "t-00000000")
    assert Authorizer(confined).grants == []
    # a bundle's rbac/ directory reads back to the same decisions
    for i, obj in enumerate(rbac_objects(profile("scoped_kubectl"), "t", "t-00000000")):
        (tmp_path / f"{i}.yaml").write_text(yaml.safe_dump(obj))
    loaded = load_rbac_dir(tmp_path)
    assert agent_user(loaded) == USER and rbac_namespace(loaded) == "arenac"
    assert Authorizer(loaded, agent_user(loaded)).grants == scoped.grants


def test_the_bundles_rbac_names_no_namespace_and_grants_only_in_the_one_it_is_applied_in() -> None:
    objects = rbac_objects(profile("scoped_kubectl"), "t", "t-00000000")
    assert all("namespace" not in obj["metadata"] for obj in objects)
    (binding,) = [obj for obj in objects if obj["kind"] == "RoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "arenac-agent"}]
    local = Authorizer(objects)  # applied where the local cluster is: `arenac`
    assert local.allows(req("list", "pods"))
    assert not local.allows(req("list", "pods", namespace="kube-system"))  # a Role without one is not everywhere
    assert not local.allows(req("list", "pods", namespace=""))
    trial = Authorizer(objects, "system:serviceaccount:trial-7:arenac-agent", namespace="trial-7")
    assert trial.allows(req("list", "pods", namespace="trial-7"))
    assert not trial.allows(req("list", "pods", namespace="arenac"))
    # the subject is the account of the binding's namespace: the same name elsewhere is not bound
    assert Authorizer(objects, USER, namespace="trial-7").grants == []


def test_a_cluster_bindings_account_without_a_namespace_binds_nobody() -> None:
    objects = role(rule([""], ["pods"], ["list"]), kind="ClusterRole")
    for obj in objects:
        obj["metadata"].pop("namespace", None)
    (binding,) = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    binding["subjects"] = [{"kind": "ServiceAccount", "name": "arenac-agent"}]
    assert Authorizer(objects).grants == []
    binding["subjects"][0]["namespace"] = "arenac"
    assert Authorizer(objects).allows(req("list", "pods", namespace="kube-system"))


@pytest.mark.parametrize("verb", ["get", "list", "watch", "create", "update", "patch", "delete"])
def test_no_rules_no_access(verb: str) -> None:
    assert not Authorizer([]).allows(req(verb, "configmaps", "spine-message-config"))
