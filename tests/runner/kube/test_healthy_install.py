"""The healthy control on a cluster (install.py `RunnerValues(healthy=True)`): the bundle's chart
installed with the faults' overlay undone runs exactly the substrate the local backend's healthy
control runs (the subchart alone, with the task's healthy settings), for every bundle of tasks/;
and without `healthy` the substrate of a bundle whose chart carries an overlay differs from it, so
the comparison could fail. Rendering only: Helm's own engine, no API server."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from arenac.k8s.helm import render_chart
from arenac.model.plan import HEALTHY_VALUES
from arenac.runner.kube.install import RELEASE, RunnerValues, install_plan

APP, HARNESS = "arenac-t1-app", "arenac-t1-harness"


def _local_healthy(bundle: Path) -> dict[tuple[str, str], dict]:
    """The substrate's objects as the local healthy control renders them (local_config.spine_spec),
    placed as the install places them."""
    healthy = bundle / HEALTHY_VALUES
    settings = yaml.safe_load(healthy.read_text(encoding="utf-8")) if healthy.is_file() else None
    objects = render_chart(bundle / "chart" / "charts" / "spine", settings or None, release=RELEASE, namespace=APP)
    return {(o["kind"], o["metadata"]["name"]): {**o, "metadata": {**o["metadata"], "namespace": APP}}
            for o in objects}


def _installed(bundle: Path, values: RunnerValues, keys) -> dict[tuple[str, str], dict]:
    plan = install_plan(bundle / "chart", APP, HARNESS, values)
    return {(o.kind, o.name): o.body for o in plan.objects if o.namespace == APP and (o.kind, o.name) in keys}


def _overlay(bundle: Path) -> dict:
    return yaml.safe_load((bundle / "chart" / "values.yaml").read_text(encoding="utf-8")).get("spine") or {}


def test_every_bundle_installs_the_local_healthy_substrate(cohort_bundles):
    assert len(cohort_bundles) >= 40
    for bundle in cohort_bundles:
        expected = _local_healthy(bundle)
        assert _installed(bundle, RunnerValues(healthy=True), expected) == expected, bundle.name


def test_the_faulted_install_differs_where_the_chart_carries_an_overlay(cohort_bundles):
    overlaid = [b for b in cohort_bundles if _overlay(b)]
    assert len(overlaid) >= 10  # the config- and image-layer variants, and tasks with healthy settings
    for bundle in overlaid:
        expected = _local_healthy(bundle)
        faulted = _installed(bundle, RunnerValues(), expected)
        differing = [key for key in expected if faulted.get(key) != expected[key]]
        # a task's healthy settings alone are the same either way; a fault's overlay is not
        faults_in_chart = any(f["layer"] in ("config", "image")
                              for f in json.loads((bundle / "plan.json").read_text())["faults"])
        assert bool(differing) == faults_in_chart, (bundle.name, differing)


def test_the_runners_values_still_apply_to_the_healthy_substrate(cohort_bundles):
    acl = next(b for b in cohort_bundles if (_overlay(b).get("redis") or {}).get("acl"))
    plan = install_plan(acl / "chart", APP, HARNESS, RunnerValues(healthy=True, time_scale=0.1))
    [channel] = [o.body for o in plan.objects if o.kind == "ConfigMap" and o.name == "spine-channel-config"]
    assert plan.healthy and channel["data"]["TIME_SCALE"] == "0.1"
    [redis] = [o.body for o in plan.objects if o.kind == "ConfigMap" and o.name == "spine-redis-config"]
    assert not any(key.startswith("acl-") for key in redis["data"]), redis["data"]
    # the harness's side of the chart is the faulted install's: only the substrate's values change
    faulted = install_plan(acl / "chart", APP, HARNESS, RunnerValues(time_scale=0.1))
    assert not faulted.healthy
    def harness_side(of):
        return [o for o in of.objects if o.namespace == HARNESS]

    assert harness_side(plan) == harness_side(faulted)
