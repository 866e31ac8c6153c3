"""The cluster backend of `arenac harness episode --target-namespace` (arenac/runner/kube/pod_backend.py)
on a real Kubernetes cluster (kind or k3s): only when ARENAC_TEST_KUBECONFIG names a kubeconfig
(ARENAC_TEST_KUBECONTEXT, a context of it), skipped with the reason otherwise. The images must be on
the cluster's nodes (docs/kubernetes.md, "The images"); the harness image must be built from this
tree (its `harness episode` knows `--target-namespace`): ARENAC_TEST_HARNESS_IMAGE names it (default
ghcr.io/arenac/harness:0.1.0). Each test makes its own trial namespaces, with a random trial id,
and uninstalls (bounded) however it ends. Not yet run on a cluster.

The cases of the fake-API suite (test_pod_backend.py) a cluster can show, from the runner's side
(its credentials; the Services' DNS names do not resolve outside the cluster, so the readiness of
the ports is the in-pod test's):

- the golden `minimal` bundle installed and ready: every component's pod is found by its owner, and
  a pod deleted before the handover is a lost part, one deleted in the agent's window the agent's
  restart; the restart challenge's rollout restart (a Deployment, the kind read from its pods) is
  no loss; the ConfigMaps read by name hold what the chart rendered;
- the harness pod, created as the runner creates it, runs the episode with its ServiceAccount
  against the substrate and hands over (the pod turns Ready: `status --handed-over`).
"""

from __future__ import annotations

import os
import secrets
import time

import pytest

from arenac.runner.bundle import open_bundle
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube.api import k8s
from arenac.runner.kube.install import RunnerValues, install_chart, install_plan
from arenac.runner.kube.pod_watch import PodWatch, app_pods, parts
from arenac.runner.kube.workloads import restart_workload
from arenac.runner.snapshot import configmap_components
from arenac.substrate.registry import driver_for
from helpers import real_cluster
from helpers.golden import complete_variant

pytestmark = real_cluster.MARKS
IMAGE = os.environ.get("ARENAC_TEST_HARNESS_IMAGE", "ghcr.io/arenac/harness:0.1.0")
INSTALL_S = 600.0
HANDOVER_S = 900.0  # provisioning, the warm-up and the faults' manifestation at time scale 1
TEARDOWN_S = 300.0
SPINE = driver_for("spine")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


@pytest.fixture
def cluster(tmp_path):
    """The runner's client and a fresh trial's namespaces, uninstalled however the test ends."""
    for api in real_cluster.cluster_client():
        for names in real_cluster.trial_namespaces_on(api, tmp_path, TEARDOWN_S):
            yield api, names


def _installed(api, trial):
    install_chart(api, complete_variant("minimal") / "chart", trial.application, trial.harness,
                  RunnerValues(time_scale=1.0), timeout_s=INSTALL_S, poll_s=2)


def _wait_for(what: str, done, bound_s: float) -> None:
    deadline = time.monotonic() + bound_s
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {bound_s:g} s"
        time.sleep(1)


def test_the_watch_the_restart_and_the_configmaps_on_a_cluster(cluster) -> None:
    api, trial = cluster
    _installed(api, trial)
    app = trial.application
    pods = app_pods(api, app, SPINE)
    assert {p.component for p in pods} == set(parts(SPINE)) and all(p.ready for p in pods)
    assert {p.kind for p in pods if p.component == "postgres"} == {"StatefulSet"}
    clock = Clock()
    watch = PodWatch(api, app, SPINE, None, clock)
    watch.check()
    core = k8s().CoreV1Api(api)
    (auth,) = [p for p in pods if p.component == "auth"]
    core.delete_namespaced_pod(auth.name, app)
    _wait_for("the deleted pod seen", lambda: (watch.check(), bool(watch.losses))[1], 60)
    assert [(x.part, x.kind) for x in watch.losses] == [("auth", "substrate")]
    watch.open_window()
    (gateway,) = [p for p in app_pods(api, app, SPINE) if p.component == "gateway"]
    core.delete_namespaced_pod(gateway.name, app)
    _wait_for("the agent's replacement counted", lambda: (watch.check(), watch.agent_restarts()["gateway"])[1] == 1,
              60)
    watch.close_window()
    assert len(watch.losses) == 1
    with watch.restarting("maintenance"):
        restart_workload(api, app, "spine-maintenance", timeout_s=300, poll_s=2, kind="Deployment")
    time.sleep(35)  # the old pod's termination grace
    watch.check()
    assert len(watch.losses) == 1
    for component in configmap_components(SPINE):
        body = core.read_namespaced_config_map(f"spine-{component}-config", app)
        assert body.data, component


def test_the_harness_pod_runs_the_episode_to_its_handover(cluster) -> None:
    api, trial = cluster
    _installed(api, trial)
    bundle = open_bundle(complete_variant("minimal"))
    install = install_plan(bundle.directory / "chart", trial.application, trial.harness)
    credentials = hp.read_substrate_credentials(api, trial.application, SPINE.cluster_credentials)
    spec = hp.HarnessPodSpec(bundle=bundle, names=trial, install=install, image=IMAGE, time_scale=1.0,
                             credentials=credentials, api_server=hp.api_server_endpoints(api),
                             broker_token=secrets.token_hex(16))
    hp.create_harness_pod(api, hp.harness_pod_objects(spec), timeout_s=120)
    core = k8s().CoreV1Api(api)

    def ready() -> bool:
        status = core.read_namespaced_pod(hp.NAME, trial.harness).status
        assert status.phase not in ("Failed", "Succeeded"), status
        return any(c.type == "Ready" and c.status == "True" for c in status.conditions or [])

    _wait_for("the harness pod's handover", ready, HANDOVER_S)
