"""A trial's substrate on a fake Kubernetes API (kmock's in-memory emulator, not a cluster:
tests/helpers/fake_kube.py, with its stand-in controller marking workloads ready): a real bundle's
chart (the golden `minimal` bundle) installed in Helm's order into the trial's two namespaces with
the runner's values, waited for, restarted, and uninstalled; and the failure paths (nothing ever
ready, a pod that never becomes ready, a failed Job, an API error mid-install, a conflict, a
cluster-scoped object), each ending in a `KubeError` (the runner's infra_error) and, after
`uninstall`, nothing of the trial left."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest

from arenac.runner.kube.api import KubeError
from arenac.runner.kube.install import (
    InstallFailed,
    RunnerValues,
    has_loadgen_switch,
    install_chart,
    install_plan,
    runner_values,
    uninstall,
)
from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.workloads import (
    RESTARTED_AT,
    InstallTimeout,
    RestartTimeout,
    WorkloadFailed,
    restart_workload,
    wait_ready,
)
from helpers.fake_kube import CONFIG_MAPS, DEPLOYMENTS, JOBS, STATEFUL_SETS
from helpers.golden import complete_variant

OWNER = "0123456789abcdef"
BUNDLE = complete_variant("minimal")
CHART = BUNDLE / "chart"
APP, HARNESS = "arenac-t1-app", "arenac-t1-harness"
# Helm's InstallOrder (helm/helm pkg/release/v1/util/kind_sorter.go), restricted to the kinds a bundle's
# chart renders, written out here rather than read from the module under test
HELM_ORDER = ["NetworkPolicy", "ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim", "Role",
              "RoleBinding", "Service", "Deployment", "StatefulSet", "Job"]
WORKLOADS = {("Deployment", APP, f"spine-{s}") for s in ("auth", "channel", "fanout", "gateway", "maintenance",
                                                          "message", "redis")} | {
    ("StatefulSet", APP, "spine-postgres"), ("Deployment", HARNESS, "arenac-loadgen")}
NAMESPACED = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)/namespaces/(?P<namespace>[^/]+)(/.*)?$")


@pytest.fixture
def trial(api):
    names = create_trial_namespaces(api, "t1", OWNER)
    assert (names.application, names.harness) == (APP, HARNESS)
    return names


def _created_kinds(fake) -> list[str]:
    return [r.body["kind"] for r in fake.requests() if r.method == "POST" and r.path != "/api/v1/namespaces"]


def _in_helm_order(kinds: list[str]) -> bool:
    ranks = [HELM_ORDER.index(kind) for kind in kinds]
    return ranks == sorted(ranks)


def _left(fake) -> list[tuple[str, str | None, str]]:
    return fake.everything()


def _install(api, fake, **kwargs):
    with fake.controller(delay_s=0.05):
        return install_chart(api, CHART, APP, HARNESS, timeout_s=kwargs.pop("timeout_s", 20), poll_s=0.05, **kwargs)


def test_the_install_creates_in_helms_order_into_the_trials_namespaces_and_waits(fake, api, trial) -> None:
    installed = _install(api, fake, plan_json=(BUNDLE / "plan.json").read_bytes())
    kinds = _created_kinds(fake)
    assert _in_helm_order(kinds), kinds
    assert not _in_helm_order(list(reversed(kinds)))  # the check can fail
    assert list(dict.fromkeys(kinds)) == ["NetworkPolicy", "ServiceAccount", "Secret", "ConfigMap", "Service",
                                          "Deployment", "StatefulSet", "Job"]
    assert len(installed.created) == len(kinds) == len(installed.plan.objects)
    for request in fake.requests():
        inside = NAMESPACED.match(request.path)
        assert inside is None or inside.group("namespace") in (APP, HARNESS), request.path
    assert set(installed.ready.workloads) == {f"{kind} {namespace}/{name}" for kind, namespace, name in WORKLOADS}
    assert installed.ready.skipped == (f"Job {HARNESS}/arenac-grader",)  # suspended: the runner resumes it
    plan = fake.get(CONFIG_MAPS, HARNESS, "arenac-plan")
    assert json.loads(plan["data"]["plan.json"]) == json.loads((BUNDLE / "plan.json").read_text())


def _loadgen(fake) -> dict:
    return fake.get(DEPLOYMENTS, HARNESS, "arenac-loadgen")["spec"]["template"]["spec"]["containers"][0]


def test_the_runners_values_reach_the_objects(fake, api, trial) -> None:
    values = RunnerValues(time_scale=0.1, harness_image="registry.example/harness:9",
                          substrate_image_repository="registry.example/spine", fault_init=True)
    _install(api, fake, values=values)
    loadgen = _loadgen(fake)
    assert loadgen["image"] == "registry.example/harness:9"
    assert loadgen["args"][loadgen["args"].index("--time-scale") + 1] == "0.1"
    assert f"http://spine-gateway.{APP}.svc:8080" in loadgen["args"]
    gateway = fake.get(DEPLOYMENTS, APP, "spine-gateway")["spec"]["template"]["spec"]["containers"][0]
    assert gateway["image"].startswith("registry.example/spine:")
    config = fake.get(CONFIG_MAPS, APP, "spine-gateway-config")
    assert config["data"]["TIME_SCALE"] == "0.1"
    fault_init = fake.get(JOBS, HARNESS, "arenac-fault-init")  # enabled, into the harness namespace
    assert fault_init is not None and APP in fault_init["spec"]["template"]["spec"]["containers"][0]["args"]


def test_without_overrides_the_charts_own_values_stay(fake, api, trial) -> None:
    _install(api, fake)
    loadgen = _loadgen(fake)
    assert loadgen["image"] == "ghcr.io/arenac/harness:0.1.0"
    assert loadgen["args"][loadgen["args"].index("--time-scale") + 1] == "1.0"
    assert fake.get(JOBS, HARNESS, "arenac-fault-init") is None


def test_the_load_generator_is_ready_by_its_ready_file_and_can_be_left_out(fake, api, trial, tmp_path) -> None:
    _install(api, fake)
    probe = _loadgen(fake)["readinessProbe"]  # ready once its plan clock started, not once it runs
    assert probe["exec"]["command"] == ["test", "-f", "/var/arenac/run/loadgen.ready"]
    plan = install_plan(CHART, APP, HARNESS, RunnerValues(loadgen=False))
    assert not [o for o in plan.objects if o.name == "arenac-loadgen"]
    assert plan.values["harness"]["loadgen"] == {"enabled": False}
    assert has_loadgen_switch(CHART)
    older = tmp_path / "chart"  # a bundle compiled before the switch: the runner cannot use it
    shutil.copytree(CHART, older)
    values = (older / "values.yaml").read_text()
    (older / "values.yaml").write_text(re.sub(r"\n  loadgen:\n    enabled: true", "", values))
    assert not has_loadgen_switch(older)
    with pytest.raises(KubeError, match=r"the chart has no value harness\.loadgen\.enabled"):
        runner_values(older, HARNESS, RunnerValues(loadgen=False))


def test_only_values_the_chart_has_are_overridden(tmp_path) -> None:
    assert runner_values(CHART, HARNESS, RunnerValues(time_scale=0.5)) == {
        "harness": {"namespace": HARNESS, "timeScale": "0.5"}, "spine": {"timeScale": "0.5"}}
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    values = (chart / "values.yaml").read_text()
    (chart / "values.yaml").write_text(re.sub(r"\n  timeScale: .*", "", values))
    assert runner_values(chart, HARNESS, RunnerValues()) == {"harness": {"namespace": HARNESS}}
    with pytest.raises(KubeError, match=r"the chart has no value harness\.timeScale"):
        runner_values(chart, HARNESS, RunnerValues(time_scale=0.5))


def _chart_with(tmp_path, text: str):
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "extra.yaml").write_text(text)
    return chart


@pytest.mark.parametrize(("extra", "says"), [
    ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: too-wide}\nrules: []\n",
     "ClusterRole too-wide is cluster-scoped"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: another}\n", "Namespace another is cluster-scoped"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: kube-system}\n",
     "names namespace kube-system, not one of the trial's"),
    ("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", "Widget w .example.com/v1. is not a kind"),
])
def test_an_object_outside_the_trial_is_refused_before_anything_is_created(fake, api, trial, tmp_path, extra,
                                                                          says) -> None:
    chart = _chart_with(tmp_path, extra)
    posts_before = len([r for r in fake.requests() if r.method == "POST"])
    with pytest.raises(KubeError, match=says):
        install_chart(api, chart, APP, HARNESS, timeout_s=5, poll_s=0.05)
    assert len([r for r in fake.requests() if r.method == "POST"]) == posts_before  # not one create


def test_an_object_in_the_trials_namespaces_is_accepted(tmp_path) -> None:
    chart = _chart_with(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine, namespace: "
                                  "{{ .Values.harness.namespace }}}\n")
    placed = {o.key for o in install_plan(chart, APP, HARNESS).objects}
    assert f"ConfigMap {HARNESS}/mine" in placed


def test_nothing_ever_ready_ends_in_the_bounded_install_timeout_and_uninstall_leaves_nothing(fake, api,
                                                                                           trial) -> None:
    start = time.monotonic()
    # the bound leaves the creates time to finish on a busy machine (about twenty requests of tens of
    # ms each): it is the wait that must run out, not the install
    with pytest.raises(InstallTimeout, match=r"the install is not ready within its 4 s: Deployment "
                                             r"arenac-t1-app/spine-auth: no status yet") as timeout:
        install_chart(api, CHART, APP, HARNESS, timeout_s=4, poll_s=0.05)  # no controller: no status ever
    assert time.monotonic() - start < 10
    assert {(n.kind, n.namespace, n.name) for n in timeout.value.not_ready} == WORKLOADS
    assert all(n.why == "no status yet (not seen by its controller); no pods" for n in timeout.value.not_ready)
    assert _left(fake) != []
    uninstalled = uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert uninstalled.namespaces == (APP, HARNESS)
    assert _left(fake) == []


def test_a_pod_that_never_becomes_ready_is_named_with_its_reason_within_the_bound(fake, api, trial) -> None:
    start = time.monotonic()
    with fake.controller(delay_s=0.05, stuck={"spine-gateway": "ImagePullBackOff"}), \
            pytest.raises(InstallTimeout) as timeout:
        install_chart(api, CHART, APP, HARNESS, timeout_s=4, poll_s=0.05)
    assert time.monotonic() - start < 10
    (stuck,) = timeout.value.not_ready
    assert (stuck.kind, stuck.namespace, stuck.name) == ("Deployment", APP, "spine-gateway")
    assert stuck.why == ("0 of 1 replicas ready; pod spine-gateway-0 Pending (gateway waiting (ImagePullBackOff: "
                         "the fake kubelet: ImagePullBackOff))")
    uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert _left(fake) == []


def test_an_api_error_mid_install_is_install_failed_and_uninstall_leaves_nothing(fake, api, trial) -> None:
    fake.fail_create(3)
    with pytest.raises(InstallFailed, match=r"cannot create ServiceAccount arenac-t1-app/arenac-agent: HTTP 500 "
                                            r".*\(after creating 2 objects\)") as failed:
        install_chart(api, CHART, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert failed.value.created == (f"NetworkPolicy {APP}/arenac-agent-egress",
                                    f"NetworkPolicy {HARNESS}/arenac-harness-isolation")
    # the fake stored the third object although it answered 500: uninstall lists, so it goes too
    assert ("serviceaccounts", APP, "arenac-agent") in _left(fake)
    uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert _left(fake) == []


def test_an_object_already_there_is_a_conflict_not_a_silent_adoption(fake, api, trial) -> None:
    from kubernetes.client import CoreV1Api

    CoreV1Api(api).create_namespaced_config_map(APP, {"metadata": {"name": "spine-gateway-config"}})
    with pytest.raises(InstallFailed, match="cannot create ConfigMap arenac-t1-app/spine-gateway-config: HTTP 409"):
        install_chart(api, CHART, APP, HARNESS, timeout_s=10, poll_s=0.05)
    uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert _left(fake) == []


def _job(name: str, status: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": HARNESS},
            "spec": {"template": {"metadata": {"labels": {"job": name}},
                                  "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}},
            "status": status}


def test_a_failed_job_fails_the_wait_at_once_and_a_complete_one_passes(fake, api, trial) -> None:
    fake.put(JOBS, HARNESS, "done", _job("done", {"succeeded": 1}))
    assert wait_ready(api, HARNESS, timeout_s=5, poll_s=0.05).workloads == (f"Job {HARNESS}/done",)
    fake.put(JOBS, HARNESS, "broken", _job("broken", {"failed": 4, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many retries"}]}))
    start = time.monotonic()
    with pytest.raises(WorkloadFailed, match=r"Job arenac-t1-harness/broken: failed \(BackoffLimitExceeded: too "
                                             r"many retries\); no pods"):
        wait_ready(api, HARNESS, timeout_s=30, poll_s=0.05)
    assert time.monotonic() - start < 5  # not the 30 s bound


def test_the_restart_patches_the_template_and_waits_for_the_new_rollout(fake, api, trial) -> None:
    _install(api, fake)
    with fake.controller(delay_s=0.3):
        restarted = restart_workload(api, APP, "spine-gateway", timeout_s=10, poll_s=0.02)
    assert restarted.kind == "Deployment" and restarted.generation == 2
    assert restarted.waited_s >= 0.3  # it waited for the controller, not for the old status
    template = fake.get(DEPLOYMENTS, APP, "spine-gateway")["spec"]["template"]["metadata"]
    assert template["annotations"][RESTARTED_AT] == restarted.restarted_at
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", restarted.restarted_at)
    (patch,) = [r for r in fake.requests() if r.method == "PATCH"]
    assert patch.path == f"/apis/apps/v1/namespaces/{APP}/deployments/spine-gateway"
    assert patch.body == {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: restarted.restarted_at}}}}}


def test_a_statefulset_restarts_too(fake, api, trial) -> None:
    _install(api, fake)
    with fake.controller(delay_s=0.05):
        restarted = restart_workload(api, APP, "spine-postgres", timeout_s=10, poll_s=0.02)
    assert (restarted.kind, restarted.generation) == ("StatefulSet", 2)
    assert RESTARTED_AT in fake.get(STATEFUL_SETS, APP, "spine-postgres")["spec"]["template"]["metadata"][
        "annotations"]


def test_a_restart_whose_rollout_never_finishes_times_out_within_the_bound(fake, api, trial) -> None:
    _install(api, fake)  # ready; then no controller: the new generation is never observed
    start = time.monotonic()
    with pytest.raises(RestartTimeout, match=r"Deployment arenac-t1-app/spine-gateway: the rollout of generation 2 "
                                             r"is not yet observed \(status at 1\); no pods"):
        restart_workload(api, APP, "spine-gateway", timeout_s=2, poll_s=0.05)  # its PATCH fits a busy machine
    assert time.monotonic() - start < 8


def test_restarting_what_is_not_there_is_a_kube_error(fake, api, trial) -> None:
    with pytest.raises(KubeError, match="no Deployment or StatefulSet of that name"):
        restart_workload(api, APP, "spine-nothing", timeout_s=5, poll_s=0.05)


def test_uninstall_is_safe_twice_and_before_any_install(fake, api, trial) -> None:
    _install(api, fake)
    first = uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert f"Deployment {APP}/spine-gateway" in first.deleted and _left(fake) == []
    again = uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert again.deleted == () and again.namespaces == (APP, HARNESS)
    for request in fake.requests():
        inside = NAMESPACED.match(request.path)
        assert inside is None or inside.group("namespace") in (APP, HARNESS), request.path


def test_uninstall_deletes_in_helms_uninstall_order(fake, api, trial) -> None:
    _install(api, fake)
    deleted = [key.split(" ")[0] for key in uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05).deleted]
    reverse = list(reversed(HELM_ORDER))
    ranks = [reverse.index(kind) if kind in reverse else -1 for kind in deleted]
    # Helm's UninstallOrder puts Services first, then the workloads; everything else is InstallOrder reversed
    services = [i for i, kind in enumerate(deleted) if kind == "Service"]
    assert services == list(range(len(services)))
    rest = [rank for kind, rank in zip(deleted, ranks, strict=True) if kind != "Service"]
    assert rest == sorted(rest)
