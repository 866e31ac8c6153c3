"""The install, readiness, restart and uninstall of a trial's substrate against a real Kubernetes
cluster (kind or k3s): only when ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT,
a context of it), skipped with the reason otherwise. The images must be on the cluster's nodes
(docs/kubernetes.md, "The images": `kind load docker-image ...`). Each test makes its own trial
namespaces, with a random trial id, and uninstalls (bounded) however it ends.

The same cases as the fake-API suite (test_install.py), where a cluster can show them:

- the golden `minimal` bundle installs (plan ConfigMap included), is ready within the bound, its
  gateway restarts and is ready again, and the uninstall leaves neither namespace; installed by
  Helm's own install action (helm_install.py) it creates the same objects and uninstalls alike;
- an image that cannot be pulled ends in `InstallTimeout` within the bound, naming the workload and
  its pods' waiting reason (ErrImagePull or ImagePullBackOff), and the uninstall leaves nothing;
- an API error mid-install (an object already there: 409) is `InstallFailed`, and the uninstall
  leaves nothing;
- a cluster-scoped object in a chart is refused before any create (nothing of the chart appears).
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

import pytest

from arenac.runner.kube.api import KubeError, k8s, status_of
from arenac.runner.kube.helm_install import helm_installer
from arenac.runner.kube.install import InstallFailed, RunnerValues, install_chart, uninstall
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.workloads import InstallTimeout, restart_workload
from helpers import real_cluster
from helpers.golden import complete_variant

pytestmark = real_cluster.MARKS
INSTALL_S = 600.0  # pulling and starting nine pods on a fresh kind node
STUCK_S = 90.0  # long enough for the kubelet to report the pull's failure
TEARDOWN_S = 300.0


@pytest.fixture
def api():
    yield from real_cluster.cluster_client()


@pytest.fixture
def trial(api, tmp_path):
    """A fresh trial's namespaces, uninstalled (bounded) at the end however the test ends."""
    yield from real_cluster.trial_namespaces_on(api, tmp_path, TEARDOWN_S)


def _gone(api, names) -> None:
    core = k8s().CoreV1Api(api)
    for name in (names.application, names.harness):
        with pytest.raises(Exception) as gone:
            core.read_namespace(name)
        assert status_of(gone.value) == 404


def test_a_bundle_installs_is_ready_restarts_and_uninstalls(api, trial) -> None:
    bundle = complete_variant("minimal")
    installed = install_chart(api, bundle / "chart", trial.application, trial.harness, RunnerValues(time_scale=1.0),
                              timeout_s=INSTALL_S, poll_s=2, plan_json=(bundle / "plan.json").read_bytes())
    assert f"Deployment {trial.application}/spine-gateway" in installed.ready.workloads
    restarted = restart_workload(api, trial.application, "spine-gateway", timeout_s=INSTALL_S, poll_s=2)
    assert restarted.generation >= 2
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    _gone(api, trial)


def test_helms_own_install_creates_the_plans_objects_and_uninstalls(api, trial) -> None:
    bundle = complete_variant("minimal")
    installer = helm_installer(Path(real_cluster.KUBECONFIG), real_cluster.CONTEXT)
    installed = install_chart(api, bundle / "chart", trial.application, trial.harness, RunnerValues(time_scale=1.0),
                              timeout_s=INSTALL_S, poll_s=2, plan_json=(bundle / "plan.json").read_bytes(),
                              installer=installer)
    assert set(installed.created) == {o.key for o in installed.plan.objects}
    assert f"Deployment {trial.application}/spine-gateway" in installed.ready.workloads
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    _gone(api, trial)


def test_an_image_that_cannot_be_pulled_is_a_bounded_install_timeout(api, trial) -> None:
    start = time.monotonic()
    with pytest.raises(InstallTimeout) as timeout:
        install_chart(api, complete_variant("minimal") / "chart", trial.application, trial.harness,
                      RunnerValues(substrate_image_repository="registry.invalid/arenac/none"),
                      timeout_s=STUCK_S, poll_s=2)
    assert time.monotonic() - start < STUCK_S + 60
    gateway = next(n for n in timeout.value.not_ready if n.name == "spine-gateway")
    assert "ErrImagePull" in gateway.why or "ImagePullBackOff" in gateway.why, gateway.why
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    _gone(api, trial)


def test_an_api_error_mid_install_is_install_failed_and_nothing_is_left(api, trial) -> None:
    k8s().CoreV1Api(api).create_namespaced_config_map(trial.application, {"metadata": {"name": "spine-gateway-config"}})
    with pytest.raises(InstallFailed, match="spine-gateway-config: HTTP 409"):
        install_chart(api, complete_variant("minimal") / "chart", trial.application, trial.harness,
                      timeout_s=INSTALL_S, poll_s=2)
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    _gone(api, trial)


def test_a_cluster_scoped_object_is_refused_before_any_create(api, trial, tmp_path) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(complete_variant("minimal") / "chart", chart)
    name = f"arenac-test-{secrets.token_hex(4)}"
    (chart / "templates" / "extra.yaml").write_text(
        f"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {name}}}\nrules: []\n")
    with pytest.raises(KubeError, match="is cluster-scoped"):
        install_chart(api, chart, trial.application, trial.harness, timeout_s=60, poll_s=2)
    assert k8s().AppsV1Api(api).list_namespaced_deployment(trial.application).items == []
    with pytest.raises(Exception) as absent:
        k8s().RbacAuthorizationV1Api(api).read_cluster_role(name)
    assert status_of(absent.value) == 404
    assert trial_namespaces(trial.trial).application == trial.application
