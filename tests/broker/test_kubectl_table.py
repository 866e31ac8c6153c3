"""The shared kubectl table (tests/helpers/kubectl_table.py) against the RBAC the compiler renders
for each access profile, decided by the broker's own RBAC authorizer (arenac/broker/rbac.py), with
no stack: for every row and profile, an allowed row's requests are all granted, and a denied row's
requests are granted up to its first denied one, which is refused. The RBAC is read from the
bundles of tasks/slow-reads.arena and tasks/revoked-grant.arena (every variant, by its plan's
`coordinates.access`) and, as the live broker test renders it, from the library's profiles.
The table's own shape is checked too: every verb family of issue 13 item 7 has a row, and every
command parses with the brokered kubectl's parser."""

from __future__ import annotations

import shlex

import pytest
import yaml

from arenac.broker.kubeargs import parse
from arenac.broker.rbac import Authorizer, agent_user
from arenac.render.rbac import rbac_objects
from broker.brokered import profile
from helpers.kubectl_table import (
    PROFILES,
    TABLE,
    Allowed,
    Denied,
    Row,
    compiled_profile_rbac,
    deny,
    fill,
    req,
    stand_in_pod,
)

# issue 13 item 7: get, describe, logs, set env, patch, rollout, scale, exec, delete pod, auth can-i
FAMILIES = ("get", "describe", "logs", "set env", "patch", "rollout restart", "rollout status", "scale", "exec",
            "delete pod", "auth can-i")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[bytes]]]:
    return compiled_profile_rbac(tmp_path_factory.mktemp("bundles"))


def _objects(documents: list[bytes]) -> list[dict]:
    return [obj for document in documents for obj in yaml.safe_load_all(document) if isinstance(obj, dict)]


def _disagreements(objects: list[dict], profile_name: str) -> list[str]:
    authz = Authorizer(objects, agent_user(objects))
    found = []
    for row in TABLE:
        for request, granted in row.expected_answers(profile_name):
            if authz.allows(request.api_request(stand_in_pod)) != granted:
                found.append(f"{row.command}: {request} is {'refused' if granted else 'granted'} "
                             f"(expected {row.outcome(profile_name)})")
    return found


def test_the_tasks_give_every_profile(bundles: dict[str, dict[str, list[bytes]]]) -> None:
    assert set(PROFILES) <= set(bundles), sorted(bundles)


@pytest.mark.parametrize("profile_name", PROFILES)
def test_the_table_agrees_with_each_bundles_rbac(bundles: dict[str, dict[str, list[bytes]]],
                                                 profile_name: str) -> None:
    failures = [f"{bundle}: {line}" for bundle, documents in sorted(bundles[profile_name].items())
                for line in _disagreements(_objects(documents), profile_name)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("profile_name", PROFILES)
def test_the_table_agrees_with_the_rbac_the_live_broker_test_renders(profile_name: str) -> None:
    objects = rbac_objects(profile(profile_name), "broker-test", "broker-test-00000000")
    assert not _disagreements(objects, profile_name)


def test_every_verb_family_has_a_row() -> None:
    commands = [row.command for row in TABLE]
    missing = [family for family in FAMILIES if not any(c.startswith(family + " ") for c in commands)]
    assert not missing
    # and each is both allowed and denied under some profile (a family never allowed tests nothing)
    for family in FAMILIES:
        outcomes = {type(row.outcome(p)) for row in TABLE if row.command.startswith(family + " ") for p in PROFILES}
        assert outcomes == {Allowed, Denied}, family


@pytest.mark.parametrize("row", TABLE, ids=[row.command.split(" -")[0] for row in TABLE])
def test_every_command_parses_as_the_brokered_kubectl_reads_it(row: Row) -> None:
    parsed = parse(shlex.split(fill(row.command, stand_in_pod)))
    assert row.command.startswith(parsed.command)


def test_a_denied_request_must_be_one_of_the_rows_requests() -> None:
    with pytest.raises(ValueError, match="not one of its requests"):
        Row("get pods", (req("list", "pods"),), scoped_kubectl=deny("get", "pods"), shell=deny("list", "pods"),
            confined=deny("list", "pods"))


def test_the_expected_answers_stop_at_the_first_denied_request() -> None:
    row = next(row for row in TABLE if row.command == "exec deployment/spine-message -- true")
    assert [(str(r), granted) for r, granted in row.expected_answers("scoped_kubectl")] == [
        ("get deployments.apps spine-message", True), ("list pods", True), ("get pods {pod:message}", True),
        ("create pods/exec {pod:message}", False)]
    assert [granted for _, granted in row.expected_answers("confined")] == [False]
    assert all(granted for _, granted in row.expected_answers("shell"))


def test_each_profile_renders_one_role_in_every_bundle(bundles: dict[str, dict[str, list[bytes]]]) -> None:
    """Each profile's RBAC is the same in every bundle of it (up to the labels), so one bundle per
    profile stands for all on a cluster."""
    for profile_name in PROFILES:
        roles = {bundle: [o.get("rules") for o in _objects(documents) if o["kind"] == "Role"]
                 for bundle, documents in bundles[profile_name].items()}
        assert len({repr(r) for r in roles.values()}) == 1, roles
