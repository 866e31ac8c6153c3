"""The brokered cluster counts the pods the agent replaces, per workload, for `never restarted`:
a rollout restart and a deleted pod count, a ConfigMap patch does not. The stack is the toy
substrate's (tests/substrate/toy_substrate.py): no process of its own, its restarts do nothing."""

from __future__ import annotations

import pytest

import arenac.substrate.registry as registry
from arenac.broker.cluster import LocalCluster
from arenac.substrate.registry import driver_for


@pytest.fixture
def cluster(monkeypatch, tmp_path):
    monkeypatch.setitem(registry.DRIVERS, "toy", "substrate.toy_substrate:DRIVER")
    stack = driver_for("toy").provision(tmp_path / "toy", tmp_path, 1.0, healthy=True)
    stack.start()
    return LocalCluster(stack, exec_user=None)


def test_every_workload_starts_at_zero(cluster):
    assert cluster.agent_restarts() == {"postgres": 0, "redis": 0, "web": 0, "worker": 0}


def test_a_rollout_and_a_deleted_pod_count_and_a_configmap_patch_does_not(cluster):
    cluster.write_configmap("toy-web-config", {"A": "2"})
    assert cluster.configmap_data("toy-web-config") == {"A": "2"}
    assert cluster.agent_restarts()["web"] == 0
    cluster.restart_workload(cluster.workload("deployments", "toy-web"))
    cluster.delete_pod(cluster.pod_name("worker"))
    cluster.delete_pod(cluster.pod_name("worker"))
    assert cluster.agent_restarts() == {"postgres": 0, "redis": 0, "web": 1, "worker": 2}
