"""The shared kubectl table (tests/helpers/kubectl_table.py) on a real Kubernetes cluster (kind or
k3s): only when ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT, a context of it)
and `kubectl` is on PATH, skipped with the reason otherwise. docs/kubernetes.md, "The kubectl table".

Per access profile: a trial's namespaces are created (arenac/runner/kube/namespaces.py), the
profile's RBAC, as a compiled bundle of tasks/slow-reads.arena holds it, is applied into the
application namespace (`apply_agent_rbac`), and every request of every row is asked of the API
server with `kubectl auth can-i`, twice: as the runner impersonating the agent's ServiceAccount
(`--as=system:serviceaccount:NS:arenac-agent`) and through the agent's own token kubeconfig
(`request_agent_token`, `write_agent_kubeconfig`). An allowed row's requests must answer "yes"; a
denied row's requests "yes" up to its first denied one, which must answer "no". The namespaces are
deleted, and waited for within a bound, however the test ends.

What `auth can-i` does not check: the order in which real kubectl sends a command's requests (the
table's order is the broker's); that is for a run of the commands themselves on a cluster.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from arenac.broker.rbac import service_account_user
from arenac.runner.kube.agent_access import (
    MIN_TOKEN_SECONDS,
    apply_agent_rbac,
    request_agent_token,
    write_agent_kubeconfig,
)
from arenac.runner.kube.api import connect
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.namespaces import create_trial_namespaces, delete_namespaces
from arenac.runner.kube.records import TrialRecords
from helpers.kubectl_table import PROFILES, TABLE, can_i_answer, can_i_argv, compiled_profile_rbac, stand_in_pod

KUBECONFIG = os.environ.get("ARENAC_TEST_KUBECONFIG")
CONTEXT = os.environ.get("ARENAC_TEST_KUBECONTEXT") or None
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not KUBECONFIG, reason="no real cluster: set ARENAC_TEST_KUBECONFIG to a kubeconfig (kind or "
                                              "k3s) to run the kubectl table against it"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH: the kubectl table asks the "
                                                               "cluster with `kubectl auth can-i`"),
]
TEARDOWN_S = 180.0
CALL_S = 60.0


@pytest.fixture(scope="module")
def profile_rbac(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    """profile -> one bundle's rbac/*.yaml (every bundle of a profile holds the same Role:
    tests/broker/test_kubectl_table.py)."""
    bundles = compiled_profile_rbac(tmp_path_factory.mktemp("bundles"), tasks=("tasks/slow-reads.arena",))
    return {profile: documents for profile, by_bundle in bundles.items()
            for _, documents in sorted(by_bundle.items())[:1]}


@pytest.fixture
def cluster_api():
    assert KUBECONFIG
    client = connect(Path(KUBECONFIG), CONTEXT)
    yield client
    client.close()


def _ask(argv: list[str]) -> tuple[bool | None, str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CALL_S)
    return can_i_answer(done.returncode, done.stdout), (done.stdout + done.stderr).strip()


@pytest.mark.parametrize("profile_name", PROFILES)
def test_a_real_cluster_answers_the_table_as_expected(cluster_api, profile_rbac, profile_name: str,
                                                      tmp_path: Path) -> None:
    trial = f"arenac-test-{secrets.token_hex(4)}"
    names = trial_namespaces(trial)
    try:
        create_trial_namespaces(cluster_api, trial, TrialRecords(tmp_path / "state" / "kube").owner())
        applied = apply_agent_rbac(cluster_api, profile_rbac[profile_name], names.application)
        token = request_agent_token(cluster_api, names.application, applied.service_account, MIN_TOKEN_SECONDS)
        agent_kubeconfig = write_agent_kubeconfig(cluster_api, token, tmp_path / "agent.kubeconfig")
        ways: dict[str, dict[str, str | None]] = {
            "impersonated": {"as_user": service_account_user(names.application, applied.service_account),
                             "kubeconfig": KUBECONFIG, "context": CONTEXT},
            "agent's token": {"kubeconfig": str(agent_kubeconfig)},
        }
        failures = []
        for row in TABLE:
            for request, granted in row.expected_answers(profile_name):
                for way, options in ways.items():
                    argv = can_i_argv(request.filled(stand_in_pod), names.application, **options)
                    answer, said = _ask(argv)
                    if answer != granted:
                        expected = "yes" if granted else "no"
                        failures.append(f"{row.command} ({way}): {shlex.join(argv)}\n"
                                        f"  expected {expected}, got: {said}")
        assert not failures, "\n".join(failures)
    finally:
        delete_namespaces(cluster_api, [names.application, names.harness], timeout_s=TEARDOWN_S, poll_s=2)
