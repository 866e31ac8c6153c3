"""The harness pod's objects (arenac/runner/kube/harness_pod.py) on a real Kubernetes cluster (kind or
k3s): only when ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT, a context of it),
skipped with the reason otherwise. The harness image must be on the cluster's nodes
(docs/kubernetes.md, "The images"). Each test makes its own trial namespaces, with a random trial
id, and uninstalls (bounded) however it ends.

The cases of the fake-API suite (test_harness_pod.py) that a cluster can show:

- the golden `minimal` bundle's chart objects created (not waited for: only its Secrets are read),
  the substrate's credentials read from them, the harness pod's objects created in order; the API
  server itself (LocalSubjectAccessReview, namespaced, as the harness's ServiceAccount) allows the
  restart's patch, the ConfigMap and workload reads and the pod list, and denies reading Secrets,
  deleting pods, patching the Role, patching a workload that is not a restart target, and anything
  in the harness namespace; uninstall leaves neither namespace;
- the bundle as the pod mounts it passes `arenac verify-bundle /bundle` in the harness image (a pod
  with the harness pod's volumes and mounts, its command that check: Succeeded), and the volume
  mounted whole does not (Failed);
- an object already there (409) is `HarnessPodFailed` naming what was created, and the uninstall
  leaves nothing;
- an over-size bundle is refused before any create.
"""

from __future__ import annotations

import copy
import secrets
import time

import pytest

from arenac.runner.bundle import open_bundle
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube.api import KubeError, k8s, status_of
from arenac.runner.kube.install import create_objects, create_rendered, install_plan, uninstall
from arenac.substrate.registry import driver_for
from helpers import real_cluster
from helpers.golden import complete_variant
from helpers.kube_volumes import bundle_with

pytestmark = real_cluster.MARKS
IMAGE = "ghcr.io/arenac/harness:0.1.0"
POD_S = 300.0
TEARDOWN_S = 300.0


@pytest.fixture
def api():
    yield from real_cluster.cluster_client()


@pytest.fixture
def trial(api, tmp_path):
    yield from real_cluster.trial_namespaces_on(api, tmp_path, TEARDOWN_S)


def _objects(api, trial, install, bundle=None):
    bundle = bundle or open_bundle(complete_variant("minimal"))
    credentials = hp.read_substrate_credentials(api, trial.application, driver_for("spine").cluster_credentials)
    spec = hp.HarnessPodSpec(bundle=bundle, names=trial, install=install, image=IMAGE, time_scale=1.0,
                             credentials=credentials, api_server=hp.api_server_endpoints(api),
                             broker_token=secrets.token_hex(16))
    return hp.harness_pod_objects(spec)


def _chart(api, trial):
    install = install_plan(complete_variant("minimal") / "chart", trial.application, trial.harness)
    create_rendered(api, install, 120)  # not waited for: the Secrets are what the harness pod needs
    return install


def _review(api, namespace: str, user: str, verb: str, group: str, resource: str, name: str = "") -> bool:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": namespace},
            "spec": {"user": user, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}",
                                              "system:authenticated"],
                     "resourceAttributes": {"namespace": namespace, "verb": verb, "group": group,
                                            "resource": resource, "name": name}}}
    answer = k8s().AuthorizationV1Api(api).create_namespaced_local_subject_access_review(namespace, body)
    return bool(answer.status.allowed)


def test_the_harness_pods_objects_and_their_rights_on_the_cluster(api, trial) -> None:
    install = _chart(api, trial)
    objects = _objects(api, trial, install)
    assert hp.create_harness_pod(api, objects, timeout_s=120) == objects.keys()
    user = f"system:serviceaccount:{trial.harness}:{hp.NAME}"
    app = trial.application
    assert _review(api, app, user, "patch", "apps", "deployments", "spine-maintenance")
    assert _review(api, app, user, "get", "apps", "deployments", "spine-maintenance")
    assert _review(api, app, user, "get", "", "configmaps", "spine-redis-config")
    assert _review(api, app, user, "list", "", "pods")
    for verb, group, resource, name in (("get", "", "secrets", "spine-credentials"), ("delete", "", "pods", "x"),
                                        ("patch", "rbac.authorization.k8s.io", "roles", hp.NAME),
                                        ("patch", "apps", "deployments", "spine-gateway"),
                                        ("get", "apps", "deployments", "spine-gateway"),
                                        ("list", "", "configmaps", "")):
        assert not _review(api, app, user, verb, group, resource, name), (verb, resource, name)
    assert not _review(api, trial.harness, user, "list", "", "pods")
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    for name in (trial.application, trial.harness):
        with pytest.raises(Exception) as gone:
            k8s().CoreV1Api(api).read_namespace(name)
        assert status_of(gone.value) == 404


def _run_check(api, trial, objects, whole_volume: bool) -> str:
    """A pod with the harness pod's volumes and mounts that runs `arenac verify-bundle /bundle`; its phase."""
    pod = copy.deepcopy(next(o.body for o in objects.objects if o.kind == "Pod"))
    pod["metadata"]["name"] = "arenac-verify-bundle"
    container = pod["spec"]["containers"][0]
    container["args"] = ["verify-bundle", "/bundle"]
    container.pop("readinessProbe")
    if whole_volume:
        container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != "bundle"] + [
            {"name": "bundle", "mountPath": "/bundle", "readOnly": True}]
    core = k8s().CoreV1Api(api)
    core.create_namespaced_pod(trial.harness, pod)
    deadline = time.monotonic() + POD_S
    while time.monotonic() < deadline:
        phase = core.read_namespaced_pod("arenac-verify-bundle", trial.harness).status.phase
        if phase in ("Succeeded", "Failed"):
            core.delete_namespaced_pod("arenac-verify-bundle", trial.harness, grace_period_seconds=0)
            while time.monotonic() < deadline:
                try:
                    core.read_namespaced_pod("arenac-verify-bundle", trial.harness)
                except Exception as error:
                    if status_of(error) == 404:
                        return str(phase)
                    raise
                time.sleep(1)
        time.sleep(2)
    raise AssertionError(f"the check's pod did not end within {POD_S:g} s")


def test_the_bundle_as_the_pod_mounts_it_passes_its_manifest_check(api, trial) -> None:
    install = _chart(api, trial)
    objects = _objects(api, trial, install)
    create_objects(api, [o for o in objects.objects if o.kind != "Pod"], 120, "the test")
    assert _run_check(api, trial, objects, whole_volume=False) == "Succeeded"
    assert _run_check(api, trial, objects, whole_volume=True) == "Failed"  # ..data and the timestamped directory


def test_an_object_already_there_is_harness_pod_failed_and_nothing_is_left(api, trial) -> None:
    install = _chart(api, trial)
    objects = _objects(api, trial, install)
    k8s().CoreV1Api(api).create_namespaced_config_map(trial.harness, {"metadata": {"name": hp.BUNDLE_CONFIG_MAP}})
    with pytest.raises(hp.HarnessPodFailed, match=f"{hp.BUNDLE_CONFIG_MAP}: HTTP 409") as failed:
        hp.create_harness_pod(api, objects, timeout_s=120)
    assert failed.value.created == objects.keys()[:4]
    uninstall(api, trial.application, trial.harness, timeout_s=TEARDOWN_S, poll_s=2)
    for name in (trial.application, trial.harness):
        with pytest.raises(Exception) as gone:
            k8s().CoreV1Api(api).read_namespace(name)
        assert status_of(gone.value) == 404


def test_an_over_size_bundle_is_refused_before_any_create(api, trial, tmp_path) -> None:
    install = _chart(api, trial)
    big = bundle_with(tmp_path, complete_variant("minimal"), {"files/fill.txt": b"x" * (hp.MAX_CONFIG_MAP_BYTES + 1)})
    with pytest.raises(KubeError, match="above the 1048576 bytes"):
        _objects(api, trial, install, bundle=big)
    core = k8s().CoreV1Api(api)
    assert {c.metadata.name for c in core.list_namespaced_config_map(trial.harness).items} <= {"kube-root-ca.crt"}
    assert [s.metadata.name for s in core.list_namespaced_secret(trial.harness).items
            if s.metadata.name in (hp.TOKEN_SECRET, hp.CREDENTIALS_SECRET)] == []
