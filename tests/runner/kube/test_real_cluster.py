"""The cluster machinery against a real Kubernetes cluster (kind or k3s): only when
ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT, a context of it), skipped with
the reason otherwise. Each test makes its own trial namespaces, with a random trial id, and deletes
them (bounded) however it ends. docs/kubernetes.md, "A trial on the cluster", says how to run it.

- the trial's namespaces are created with their labels, and deleted and gone within the bound;
- the agent's kubeconfig (TokenRequest, the bundle's RBAC applied into the application namespace)
  can list pods there and cannot in the harness namespace (SelfSubjectAccessReview, and the call);
- after the revocation the token is refused (401) within 30 s;
- the cleanup deletes the namespaces of a trial whose runner is gone.
"""

from __future__ import annotations

import json
import os
import secrets
import time

import pytest

from arenac.runner.kube.agent_access import (
    apply_agent_rbac,
    request_agent_token,
    revoke_agent_access,
    write_agent_kubeconfig,
)
from arenac.runner.kube.api import connect, k8s, status_of
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.namespaces import create_trial_namespaces, delete_namespaces
from arenac.runner.kube.records import TrialRecords, cleanup
from helpers import ROOT, real_cluster

pytestmark = real_cluster.MARKS
RBAC = ROOT / "tests/golden/compound/expected/locks-and-slow-reads/locks-and-slow-reads-8cff9690/rbac"
TEARDOWN_S = 180.0


@pytest.fixture
def api():
    yield from real_cluster.cluster_client()


@pytest.fixture
def trial(api, tmp_path):
    """A fresh trial id, its records, and its namespaces deleted (and waited for) at the end."""
    trial_id = f"arenac-test-{secrets.token_hex(4)}"
    records = TrialRecords(tmp_path / "state" / "kube")
    yield trial_id, records
    names = trial_namespaces(trial_id)
    delete_namespaces(api, [names.application, names.harness], timeout_s=TEARDOWN_S, poll_s=2)


def _can(agent, verb: str, resource: str, namespace: str) -> bool:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource}}}
    return bool(k8s().AuthorizationV1Api(agent).create_self_subject_access_review(review).status.allowed)


def _list_pods_status(agent, namespace: str) -> int:
    try:
        k8s().CoreV1Api(agent).list_namespaced_pod(namespace)
        return 200
    except Exception as error:
        status = status_of(error)
        if status is None:
            raise
        return status


def test_namespaces_are_created_labelled_and_deleted(api, trial) -> None:
    trial_id, records = trial
    names = create_trial_namespaces(api, trial_id, records.owner())
    core = k8s().CoreV1Api(api)
    for role, name in names.by_role():
        assert core.read_namespace(name).metadata.labels["arenac.dev/role"] == role
    assert delete_namespaces(api, [names.application, names.harness], timeout_s=TEARDOWN_S, poll_s=2)
    for name in (names.application, names.harness):
        with pytest.raises(Exception) as gone:
            core.read_namespace(name)
        assert status_of(gone.value) == 404


def test_the_agents_kubeconfig_reaches_the_application_namespace_only_until_revoked(api, trial, tmp_path) -> None:
    trial_id, records = trial
    names = create_trial_namespaces(api, trial_id, records.owner())
    applied = apply_agent_rbac(api, [p.read_bytes() for p in sorted(RBAC.glob("*.yaml"))], names.application)
    token = request_agent_token(api, names.application, applied.service_account, 600)
    path = write_agent_kubeconfig(api, token, tmp_path / "agent.kubeconfig")
    agent = connect(path)
    try:
        assert _can(agent, "list", "pods", names.application)
        assert not _can(agent, "list", "pods", names.harness)
        assert not _can(agent, "list", "secrets", names.application)
        assert _list_pods_status(agent, names.application) == 200
        assert _list_pods_status(agent, names.harness) == 403
        revocation = revoke_agent_access(api, names.application, applied.service_account)
        assert revocation.role_bindings == ("arenac-agent",) and revocation.service_account_deleted
        deadline = time.monotonic() + 30
        while _list_pods_status(agent, names.application) != 401 and time.monotonic() < deadline:
            time.sleep(1)
        assert _list_pods_status(agent, names.application) == 401
    finally:
        agent.close()


def test_cleanup_deletes_what_a_dead_runner_left(api, trial) -> None:
    trial_id, records = trial
    names = create_trial_namespaces(api, trial_id, records.owner())
    records.root.mkdir(parents=True, exist_ok=True)
    (records.root / f"{trial_id}.json").write_text(json.dumps({  # a runner killed mid-trial: not this process
        "trial": trial_id, "runner": {"pid": os.getpid(), "started": 1.0}, "server": str(api.configuration.host),
        "context": None, "namespaces": [names.application, names.harness]}))
    lines = cleanup(api, records, timeout_s=TEARDOWN_S, poll_s=2)
    assert f"deleted namespace {names.application} (trial {trial_id}, application: its runner is gone)" in lines
    assert records.records() == []
