"""The chart installed by Helm's own install action (arenac/runner/kube/helm_install.py), where it
runs without a cluster: Helm's install with `dry_run="client"` (helm-python-sdk, Helm's Go engine;
no request to any API server) renders, for every bundle of tasks/, faulted and healthy, exactly
the chart objects the install plan creates, and the comparison fails for a plan with other values;
against an API server that is not there, Helm's install fails as `InstallFailed` naming it. The
install on a real cluster is tests/runner/kube/test_install_cluster.py's (skipped without one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenac.runner.kube.helm_install import helm_installer, helm_manifest
from arenac.runner.kube.install import InstallFailed, RunnerValues, install_plan

APP, HARNESS = "arenac-t1-app", "arenac-t1-harness"
NOWHERE = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("kube") / "kubeconfig.yaml"
    path.write_text(NOWHERE)
    return path


def _config(kubeconfig: Path):
    def make():
        from helm_python import Config

        return Config(kubeconfig_path=kubeconfig)
    return make


def _chart_objects(plan) -> dict[str, dict]:
    return {o.key: o.body for o in plan.objects if o.key not in plan.added}


def _by_key(objects: list[dict]) -> dict[str, dict]:
    return {f"{o['kind']} {o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects}


def test_helms_install_renders_the_plans_objects_for_every_bundle(cohort_bundles, kubeconfig):
    assert len(cohort_bundles) >= 40
    for bundle in cohort_bundles:
        plan_json = (bundle / "plan.json").read_bytes()
        for healthy in (False, True):
            plan = install_plan(bundle / "chart", APP, HARNESS, RunnerValues(time_scale=0.1, fault_init=False,
                                                                            healthy=healthy), plan_json)
            assert plan.added == (f"ConfigMap {HARNESS}/arenac-plan",)
            manifest = _by_key(helm_manifest(plan, _config(kubeconfig)))
            assert manifest == _chart_objects(plan), (bundle.name, healthy)


def test_the_comparison_fails_for_a_plan_with_other_values(cohort_bundles, kubeconfig):
    bundle = cohort_bundles[0]
    plan = install_plan(bundle / "chart", APP, HARNESS, RunnerValues(time_scale=0.1))
    other = install_plan(bundle / "chart", APP, HARNESS, RunnerValues(time_scale=0.5))
    assert _by_key(helm_manifest(other, _config(kubeconfig))) != _chart_objects(plan)


def test_helms_install_against_no_api_server_is_an_install_failure_with_nothing_created(cohort_bundles, kubeconfig):
    plan = install_plan(cohort_bundles[0] / "chart", APP, HARNESS, RunnerValues(time_scale=0.1))
    with pytest.raises(InstallFailed, match=f"helm install arenac into {APP}: ") as failed:
        helm_installer(kubeconfig, None)(None, plan, 5.0)
    assert failed.value.created == ()
