"""Every kubectl verb, allowed and denied, under the RBAC the library's profiles render to, against a
live stack. A denial is the API server's Forbidden message for the first request kubectl would
have sent that the Role does not grant; nothing happens, and the action is logged as denied."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.brokered import Episode

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

OK = None
PROFILES = ("scoped_kubectl", "shell", "confined")

# command (with {pod:COMPONENT} placeholders) -> the first denied request per profile, or OK
MATRIX: list[tuple[str, dict[str, tuple[str, ...] | None]]] = [
    ("get pods", {"scoped_kubectl": OK, "shell": OK, "confined": ("list", "pods")}),
    ("get pod {pod:message}", {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "pods", "{pod:message}")}),
    ("get configmap spine-message-config -o yaml",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "configmaps", "spine-message-config")}),
    ("get secrets", {p: ("list", "secrets") for p in PROFILES}),
    ("get replicasets", {"scoped_kubectl": OK, "shell": ("list", "replicasets", "", "apps"),
                         "confined": ("list", "replicasets", "", "apps")}),
    ("get nodes", {p: ("list", "nodes", "", "", "") for p in PROFILES}),
    ("get pods -n kube-system", {p: ("list", "pods", "", "", "kube-system") for p in PROFILES}),
    ("describe deployment spine-message",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-message", "apps")}),
    ("logs {pod:postgres}", {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "pods", "spine-postgres-0")}),
    ("logs deployment/spine-message --tail=5",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-message", "apps")}),
    ("patch configmap spine-message-config --type merge -p {\"data\":{\"DB_POOL_SIZE\":\"10\"}}",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("patch", "configmaps", "spine-message-config")}),
    ("patch configmap spine-postgres-config --type merge -p {\"data\":{\"x\":\"y\"}}",
     {p: ("patch", "configmaps", "spine-postgres-config") for p in PROFILES}),
    ("set env deployment/spine-gateway ARENAC_UNUSED-",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-gateway", "apps")}),
    ("set image deployment/spine-message message=ghcr.io/arenac/spine:1.4.2",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-message", "apps")}),
    ("rollout restart deployment/spine-gateway",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-gateway", "apps")}),
    ("rollout restart statefulset/spine-postgres",
     {"scoped_kubectl": ("patch", "statefulsets", "spine-postgres", "apps"),
      "shell": ("patch", "statefulsets", "spine-postgres", "apps"),
      "confined": ("get", "statefulsets", "spine-postgres", "apps")}),
    ("rollout status deployment/spine-message --timeout=30s",
     {"scoped_kubectl": OK, "shell": OK, "confined": ("get", "deployments", "spine-message", "apps")}),
    ("scale deployment/spine-message --replicas=1",
     {"scoped_kubectl": OK, "shell": ("patch", "deployments/scale", "spine-message", "apps"),
      "confined": ("get", "deployments", "spine-message", "apps")}),
    ("scale deployment/spine-redis --replicas=1",
     {"scoped_kubectl": ("patch", "deployments/scale", "spine-redis", "apps"),
      "shell": ("patch", "deployments/scale", "spine-redis", "apps"),
      "confined": ("get", "deployments", "spine-redis", "apps")}),
    ("exec deployment/spine-message -- true",
     {"scoped_kubectl": ("create", "pods/exec", "{pod:message}"), "shell": OK,
      "confined": ("get", "deployments", "spine-message", "apps")}),
    ("exec {pod:postgres} -- true",
     {"scoped_kubectl": ("create", "pods/exec", "spine-postgres-0"), "shell": OK,
      "confined": ("get", "pods", "spine-postgres-0")}),
    ("delete pod {pod:fanout}",
     {"scoped_kubectl": OK, "shell": ("delete", "pods", "{pod:fanout}"),
      "confined": ("delete", "pods", "{pod:fanout}")}),
]


def _fill(text: str, e: Episode) -> str:
    for component in ("message", "fanout", "postgres", "gateway"):
        text = text.replace(f"{{pod:{component}}}", e.pod(component))
    return text


def _forbidden(e: Episode, verb: str, resource: str, name: str = "", group: str = "", namespace: str = "arenac") -> str:
    from broker.brokered import forbidden

    return forbidden(verb, resource, _fill(name, e), group, namespace)


@pytest.mark.parametrize("profile_name", PROFILES)
def test_kubectl_verbs_under_each_profile(episode: Callable[..., Episode], profile_name: str) -> None:
    e = episode(profile_name)
    failures = []
    for command, expected in MATRIX:
        argv = [_fill(word, e) for word in _split(command)]
        pids_before = e.cluster.stack.pids()
        result = e.call("kubectl", *argv)
        denied = expected[profile_name]
        record = e.actions[-1]
        assert record["tool"] == "kubectl" and record["argv"] == argv
        if denied is OK:
            if result.code != 0 or not result.allowed or not record["allowed"]:
                failures.append(f"{command}: expected allowed, got {result.code} {result.stderr.strip()}")
        else:
            message = _forbidden(e, *denied)
            if result.code != 1 or result.allowed or record["allowed"] or result.stderr.strip() != message:
                failures.append(f"{command}: expected\n  {message}\ngot {result.code}\n  {result.stderr.strip()}")
            if record["reason"] != message:
                failures.append(f"{command}: logged reason {record['reason']!r}")
            if e.cluster.stack.pids() != pids_before:
                failures.append(f"{command}: a denied call restarted something")
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
