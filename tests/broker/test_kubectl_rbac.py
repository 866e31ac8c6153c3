"""Every kubectl verb, allowed and denied, under the RBAC the library's profiles render to, against a
live stack: the rows of the shared kubectl table (tests/helpers/kubectl_table.py; without a stack,
tests/broker/test_kubectl_table.py checks it against the compiled RBAC, and
tests/runner/kube/test_kubectl_table_cluster.py against a real cluster). A denial is the API
server's Forbidden message for the first request kubectl would have sent that the Role does not
grant; nothing happens, and the action is logged as denied."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.brokered import Episode, forbidden
from helpers.kubectl_table import PROFILES, TABLE, Allowed, Request, fill

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def _forbidden(e: Episode, request: Request) -> str:
    filled = request.filled(e.pod)
    return forbidden(filled.verb, filled.resource, filled.name, filled.group, filled.namespace)


@pytest.mark.parametrize("profile_name", PROFILES)
def test_kubectl_verbs_under_each_profile(episode: Callable[..., Episode], profile_name: str) -> None:
    """Every row of the shared kubectl table (tests/helpers/kubectl_table.py) under one profile."""
    e = episode(profile_name)
    failures = []
    for row in TABLE:
        argv = [fill(word, e.pod) for word in _split(row.command)]
        pids_before = e.cluster.stack.pids()
        result = e.call("kubectl", *argv)
        expected = row.outcome(profile_name)
        record = e.actions[-1]
        assert record["tool"] == "kubectl" and record["argv"] == argv
        if row.question:  # auth can-i: the call is allowed, its answer is the expectation
            yes = isinstance(expected, Allowed)
            answer, code = ("yes", 0) if yes else ("no", 1)
            if (result.code != code or result.stdout.strip() != answer or not result.allowed
                    or not record["allowed"]):
                failures.append(f"{row.command}: expected {answer!r} (exit {code}), got {result.code} "
                                f"{result.stdout.strip()!r} {result.stderr.strip()}")
        elif isinstance(expected, Allowed):
            if result.code != 0 or not result.allowed or not record["allowed"]:
                failures.append(f"{row.command}: expected allowed, got {result.code} {result.stderr.strip()}")
        else:
            message = _forbidden(e, expected.request)
            if result.code != 1 or result.allowed or record["allowed"] or result.stderr.strip() != message:
                failures.append(f"{row.command}: expected\n  {message}\ngot {result.code}\n  {result.stderr.strip()}")
            if record["reason"] != message:
                failures.append(f"{row.command}: logged reason {record['reason']!r}")
            if e.cluster.stack.pids() != pids_before:
                failures.append(f"{row.command}: a denied call restarted something")
    assert not failures, "\n".join(failures)


def test_denied_call_through_the_client_prints_forbidden_and_exits_1(episode: Callable[..., Episode]) -> None:
    e = episode("confined")
    done = e.run("kubectl", "patch", "configmap", "spine-message-config", "--type", "merge",
                 "-p", '{"data": {"DB_POOL_SIZE": "1"}}')
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        'Error from server (Forbidden): configmaps "spine-message-config" is forbidden: User '
        '"system:serviceaccount:arenac:arenac-agent" cannot patch resource "configmaps" in API group "" '
        'in the namespace "arenac"\n')
    assert "DB_POOL_SIZE: '10'" in e.cluster.stack.config_path("message").read_text()
    assert e.actions == [{"t": e.actions[0]["t"], "tool": "kubectl", "allowed": False, "reason": done.stderr.strip(),
                          "argv": ["patch", "configmap", "spine-message-config", "--type", "merge",
                                   "-p", '{"data": {"DB_POOL_SIZE": "1"}}']}]


def test_named_resource_rules(episode: Callable[..., Episode]) -> None:
    """A Role that names one ConfigMap: get and a name-selected list of it pass, a plain list does not."""
    from broker.brokered import role, rule

    e = episode("confined", rbac=role(rule([""], ["configmaps"], ["get", "list"], ["spine-message-config"])))
    assert e.call("kubectl", "get", "cm", "spine-message-config").code == 0
    assert e.call("kubectl", "get", "cm", "--field-selector", "metadata.name=spine-message-config").code == 0
    listed = e.call("kubectl", "get", "cm")
    assert not listed.allowed and 'cannot list resource "configmaps"' in listed.stderr
    other = e.call("kubectl", "get", "cm", "spine-auth-config")
    assert not other.allowed and '"spine-auth-config" is forbidden' in other.stderr


def test_subresources_are_authorised_separately(episode: Callable[..., Episode]) -> None:
    from broker.brokered import role, rule

    pods_only = episode("confined", rbac=role(rule([""], ["pods"], ["get", "list"])))
    logs = pods_only.call("kubectl", "logs", "spine-postgres-0")
    assert not logs.allowed and 'cannot get resource "pods/log"' in logs.stderr
    shell = pods_only.call("kubectl", "exec", "spine-postgres-0", "--", "true")
    assert not shell.allowed and 'cannot create resource "pods/exec"' in shell.stderr
    with_log = episode("confined", rbac=role(rule([""], ["pods"], ["get"]), rule([""], ["pods/log"], ["get"])))
    assert with_log.call("kubectl", "logs", "spine-postgres-0", "--tail=1").code == 0
    # the deployment lookup comes first: pods/log alone is not enough for logs deployment/X
    via_deployment = with_log.call("kubectl", "logs", "deployment/spine-message")
    assert 'cannot get resource "deployments"' in via_deployment.stderr


def _split(command: str) -> list[str]:
    import shlex

    return shlex.split(command)
