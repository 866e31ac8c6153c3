"""The pure parts of the kubectl table's real-cluster side (tests/runner/kube/test_kubectl_table_cluster.py),
without a cluster: a table request as the `kubectl auth can-i` argv that asks about it, and the
answer read back from kubectl's exit code and output."""

from __future__ import annotations

import pytest

from helpers.kubectl_table import TABLE, Request, can_i_answer, can_i_argv, req, stand_in_pod

APP = "arenac-t1-app"
AGENT = f"system:serviceaccount:{APP}:arenac-agent"


@pytest.mark.parametrize(("request_", "argv"), [
    (req("list", "pods"), ["list", "pods", "--namespace", APP]),
    (req("get", "pods", "spine-postgres-0"), ["get", "pods/spine-postgres-0", "--namespace", APP]),
    (req("get", "pods/log", "spine-postgres-0"),
     ["get", "pods/spine-postgres-0", "--subresource=log", "--namespace", APP]),
    (req("create", "pods/exec"), ["create", "pods", "--subresource=exec", "--namespace", APP]),
    (req("patch", "deployments/scale", "spine-message", "apps"),
     ["patch", "deployments.apps/spine-message", "--subresource=scale", "--namespace", APP]),
    (req("list", "replicasets", "", "apps"), ["list", "replicasets.apps", "--namespace", APP]),
    (req("list", "pods", namespace="kube-system"), ["list", "pods", "--namespace", "kube-system"]),
    (req("list", "nodes", namespace=""), ["list", "nodes", "--all-namespaces"]),
])
def test_a_request_becomes_the_can_i_that_asks_it(request_: Request, argv: list[str]) -> None:
    assert can_i_argv(request_, APP) == ["kubectl", "auth", "can-i", *argv]


def test_the_agent_is_impersonated_or_is_whoever_its_kubeconfig_authenticates() -> None:
    request = req("delete", "pods", "spine-fanout-pod")
    assert can_i_argv(request, APP, as_user=AGENT, kubeconfig="/k/runner", context="kind-arenac") == [
        "kubectl", "auth", "can-i", "delete", "pods/spine-fanout-pod", "--namespace", APP, f"--as={AGENT}",
        "--kubeconfig=/k/runner", "--context=kind-arenac"]
    assert can_i_argv(request, APP, kubeconfig="/k/agent")[-1] == "--kubeconfig=/k/agent"
    assert not any(word.startswith("--as") for word in can_i_argv(request, APP, kubeconfig="/k/agent"))


def test_a_placeholder_must_be_filled_first() -> None:
    with pytest.raises(ValueError, match="fill its pod placeholders"):
        can_i_argv(req("get", "pods", "{pod:message}"), APP)
    filled = req("get", "pods", "{pod:message}").filled(stand_in_pod)
    assert can_i_argv(filled, APP)[4] == "pods/spine-message-pod"


def test_every_request_of_the_table_reads_back_from_its_argv() -> None:
    """kubectl's reading of the argv (`TYPE[.GROUP][/NAME]`, `--subresource`, the namespace or -A)
    gives back the request, for every request of every row."""
    for row in TABLE:
        for request in row.requests:
            filled = request.filled(stand_in_pod)
            argv = can_i_argv(filled, APP)
            verb, target = argv[3], argv[4]
            resource, _, name = target.partition("/")
            base, _, group = resource.partition(".")
            sub = next((w.split("=", 1)[1] for w in argv if w.startswith("--subresource=")), "")
            namespace = "" if "--all-namespaces" in argv else argv[argv.index("--namespace") + 1]
            assert (verb, base, sub, name, group) == (filled.verb, filled.base, filled.subresource, filled.name,
                                                      filled.group), row.command
            assert namespace == (APP if filled.namespace == "arenac" else filled.namespace), row.command


@pytest.mark.parametrize(("code", "stdout", "answer"), [
    (0, "yes\n", True),
    (1, "no\n", False),
    (1, "no - RBAC: not allowed\n", False),
    (1, "", None),  # an error: kubectl said why on stderr
    (0, "no\n", None),
    (1, "yes\n", None),
])
def test_the_answer_is_read_from_the_exit_code_and_the_first_word(code: int, stdout: str, answer: bool | None) -> None:
    assert can_i_answer(code, stdout) is answer
