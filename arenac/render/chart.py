"""The bundle's Helm chart: a parent chart that vendors the substrate's chart.

    chart/Chart.yaml             depends on the substrate chart, vendored under charts/
    chart/values.yaml            the overlay: the task's healthy settings, config- and image-layer
                                 faults, harness settings
    chart/healthy-values.yaml    only for a task with a `healthy { }` block: its settings, in the
                                 substrate chart's own shape (`helm install chart/charts/<substrate>
                                 -f chart/healthy-values.yaml`): what the healthy control installs
    chart/templates/*.yaml       harness: agent ServiceAccount, NetworkPolicies, fault-init
                                 Job, load generator, grader (static, from arenac/templates/chart)
    chart/charts/<substrate>/    the substrate chart, copied byte for byte

A task's healthy settings are the substrate as the task has it when healthy: they are in every
variant's overlay, under its faults' values (lowering refuses a fault whose values set the same key,
E0532), and the healthy control, which runs the substrate chart with no fault, takes them from
healthy-values.yaml. A task without the block gets no such file and the overlay it always had.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import yaml

from arenac.core.serialize import dump_yaml
from arenac.model.actions import ValuesAction
from arenac.model.plan import HEALTHY_VALUES
from arenac.model.substrate import Substrate
from arenac.model.task import Variant

HARNESS_IMAGE = "ghcr.io/arenac/harness:0.1.0"


def healthy_overlay(variant: Variant) -> dict:
    """The substrate values the task sets for its healthy stack (`healthy { }`), by values path."""
    overlay: dict = {}
    for setting in variant.spec.healthy:
        _set_path(overlay, setting.values_path.split("."), setting.value)
    return overlay


def values_overlay(variant: Variant) -> dict:
    """The substrate values a variant changes: the task's healthy settings, then every `values`
    action of its faults."""
    overlay = healthy_overlay(variant)
    for fault in variant.faults:
        for action in fault.inject:
            if isinstance(action, ValuesAction):
                _set_path(overlay, action.path.split("."), str(action.value))
    return overlay


def _set_path(tree: dict, path: list[str], value) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def chart_files(variant: Variant, substrate: Substrate, chart_dir: Path) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    vendored = _vendored_chart(chart_dir)
    sub_version = _chart_version(vendored.get("Chart.yaml", b""))
    files["chart/Chart.yaml"] = dump_yaml({
        "apiVersion": "v2",
        "name": f"arenac-{variant.task}"[:53],
        "description": f"arenac task {variant.task}, variant {variant.id}",
        "type": "application",
        "version": "0.1.0",
        "dependencies": [{"name": substrate.chart_name, "version": sub_version}],
    })
    runtime_at_start = any(
        fault.layer == "runtime" and fault.onset.kind == "at_start" for fault in variant.faults
    )
    gateway = substrate.service("gateway")
    files["chart/values.yaml"] = dump_yaml({
        substrate.chart_name: values_overlay(variant),
        "harness": {
            "task": variant.task,
            "variant": variant.id,
            "substrate": substrate.name,
            "image": HARNESS_IMAGE,
            "namespace": "arenac-harness",
            "planConfigMap": "arenac-plan",
            "gateway": gateway.workload if gateway else substrate.name,
            "timeScale": "1.0",
            "agentToken": bool(variant.access.kube),
            "faultInit": {"enabled": runtime_at_start},
            "loadgen": {"enabled": True},
        },
    })
    if variant.spec.healthy:
        files[HEALTHY_VALUES] = dump_yaml(healthy_overlay(variant))
    files.update(_harness_templates())
    for relative, data in vendored.items():
        files[f"chart/charts/{substrate.chart_name}/{relative}"] = data
    return files


@functools.lru_cache(maxsize=1)
def _harness_templates() -> dict[str, str]:
    """The static harness templates, read once per process."""
    templates = resources.files("arenac").joinpath("templates/chart")
    return {
        f"chart/templates/{item.name}": item.read_text(encoding="utf-8")
        for item in sorted(templates.iterdir(), key=lambda t: t.name)
        if item.name.endswith((".yaml", ".tpl"))
    }


@functools.lru_cache(maxsize=8)
def _vendored_chart(chart_dir: Path) -> dict[str, bytes]:
    if not chart_dir.is_dir():
        return {}
    return {
        path.relative_to(chart_dir).as_posix(): path.read_bytes()
        for path in sorted(chart_dir.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@functools.lru_cache(maxsize=8)
def _chart_version(chart_yaml: bytes) -> str:
    data = yaml.safe_load(chart_yaml.decode("utf-8")) if chart_yaml else None
    return str((data or {}).get("version", "0.1.0"))
