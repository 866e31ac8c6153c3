"""`--jobs` checked against a cluster's nodes (arenac/runner/kube/cluster_capacity.py), on a FAKE
Kubernetes API (kmock's in-memory emulator, tests/helpers/fake_kube.py: a fake, not a cluster; the
nodes and the pods bound to them are stored by the test as a cluster would report them). The golden
`minimal` bundle's chart is rendered with real Helm for the trial's requests. Both sides: a node
that takes pods counts with the room its pods leave, a cordoned, tainted or not-ready node does not;
`--jobs` within the slots says nothing, beyond them one line."""

from __future__ import annotations

import pytest

from arenac.k8s.capacity import MI, Resources, bundle_requests
from arenac.runner.kube import cluster_capacity as cc
from arenac.runner.kube.api import KubeError
from helpers.fake_kube import fail_requests, kmock
from helpers.golden import complete_variant

NODES = kmock.resource("", "v1", "nodes")
PODS = kmock.resource("", "v1", "pods")


@pytest.fixture(scope="module")
def peak() -> Resources:
    return cc.trial_peak([complete_variant("minimal")])


def _node(name: str, cpu_m: int, memory_b: int, *, ready: bool = True, cordoned: bool = False,
          taint: str | None = None) -> dict:
    spec: dict = {"unschedulable": True} if cordoned else {}
    if taint:
        spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": taint}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec,
            "status": {"allocatable": {"cpu": f"{cpu_m}m", "memory": str(memory_b), "ephemeral-storage": "50Gi",
                                       "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _pod(name: str, node: str, cpu_m: int, memory_mi: int, phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "other"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"}}}]},
            "status": {"phase": phase}}


def test_the_peak_is_the_charts_pods_and_a_restarts_surge(peak) -> None:
    requests = bundle_requests(complete_variant("minimal"))
    assert peak == requests.peak and peak.cpu_m > 0 and peak.memory_b > 0 and peak.pods >= 9


def test_only_nodes_that_take_pods_count_with_the_room_their_pods_leave(fake, api, peak) -> None:
    three = peak.times(3)
    for name, extra in (("a", {}), ("cordoned", {"cordoned": True}), ("tainted", {"taint": "NoSchedule"}),
                        ("not-ready", {"ready": False}), ("prefers-not", {"taint": "PreferNoSchedule"})):
        fake.put(NODES, None, name, _node(name, three.cpu_m, three.memory_b, **extra))
    # node a: a running pod takes a trial's cpu; an ended pod holds nothing
    fake.put(PODS, "other", "busy", _pod("busy", "a", peak.cpu_m, 1))
    fake.put(PODS, "other", "done", _pod("done", "a", 10 * peak.cpu_m, 1, phase="Succeeded"))
    room = {node.name: node for node in cc.node_room(api)}
    assert sorted(room) == ["a", "prefers-not"]  # a PreferNoSchedule taint only prefers
    assert room["a"].requested == Resources(cpu_m=peak.cpu_m, memory_b=MI, pods=1)
    assert cc.trials_per_node(room["a"].free, peak) == 2 and cc.trials_per_node(room["prefers-not"].free, peak) == 3
    slots = cc.cluster_slots(list(room.values()), peak)
    assert slots == 5
    assert cc.jobs_warning(5, slots, len(room), peak) is None
    warning = cc.jobs_warning(6, slots, len(room), peak)
    assert warning is not None and "--jobs 6" in warning and "holds 5 trials side by side" in warning
    assert peak.describe() in warning and "infra_error" in warning
    assert "holds no trial" in cc.jobs_warning(1, 0, 0, peak)


def test_an_api_that_refuses_is_a_kube_error(fake, api) -> None:
    fail_requests(fake, "get", NODES, status=403)
    with pytest.raises(KubeError, match="cannot list the cluster's nodes and pods"):
        cc.node_room(api)


def test_the_launcher_warns_before_a_cluster_campaign_and_only_beyond_its_slots(fake, peak, tmp_path, capsys) -> None:
    from arenac.runner.bundle import open_bundle
    from arenac.runner.launch import warn_capacity
    from arenac.runner.options import ClusterTarget

    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{fake.url}"}}}}]
users: [{{name: u, user: {{token: not-a-real-token}}}}]
contexts: [{{name: fake, context: {{cluster: fake, user: u}}}}]
current-context: fake
""")
    target, bundles = ClusterTarget(kubeconfig=kubeconfig), [open_bundle(complete_variant("minimal"))]
    two = peak.times(2)
    fake.put(NODES, None, "a", _node("a", two.cpu_m, two.memory_b))
    warn_capacity(2, tmp_path / "out", target, bundles)
    assert capsys.readouterr().err == ""
    warn_capacity(3, tmp_path / "out", target, bundles)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("arenac: warning: --jobs 3") and "holds 2 trials" in said[0]
    fail_requests(fake, "get", NODES, status=403)
    warn_capacity(3, tmp_path / "out", target, bundles)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "--jobs 3 not checked against the cluster: cannot list" in said[0]
