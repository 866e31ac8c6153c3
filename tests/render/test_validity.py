"""Every variant of every task: the chart renders with real Helm, every rendered object and
every rbac/ object passes kubernetes-validate (strict) for 1.30 and the newest version, and
the RBAC lint finds nothing beyond what the access surface explicitly allows."""

from __future__ import annotations

import pytest
import yaml

from arenac.k8s.helm import render_chart
from arenac.k8s.rbac_lint import lint_rbac
from arenac.k8s.schema import LATEST, validate_objects
from arenac.lower.library import load_library
from arenac.pipeline import compile_paths, write_bundles
from arenac.variants import built
from helpers import task_paths


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    compilation = compile_paths(task_paths())
    write_bundles(compilation, out)
    library = load_library()
    allow = {v.id: frozenset(v.access.allow) for t in compilation.tasks for v in built(t.lowered.spec, library)}
    return sorted((path.parent, allow[path.parent.name]) for path in out.glob("*/*/manifest.json"))


def test_there_are_bundles(bundles):
    assert len(bundles) >= 3


def test_charts_render_and_validate(bundles):
    for bundle, _ in bundles:
        objects = render_chart(bundle / "chart", namespace="arenac-trial")
        kinds = {o["kind"] for o in objects}
        assert {"Deployment", "ConfigMap", "ServiceAccount", "NetworkPolicy"} <= kinds, bundle.name
        problems = validate_objects(objects, ("1.30", LATEST))
        assert not problems, f"{bundle.name}: {problems[:3]}"


def test_config_layer_fault_reaches_the_rendered_configmap(bundles):
    for bundle, _ in bundles:
        overlay = yaml.safe_load((bundle / "chart" / "values.yaml").read_text())
        services = (overlay.get("spine") or {}).get("services") or {}
        objects = render_chart(bundle / "chart")
        for service, values in services.items():
            for key, value in (values.get("config") or {}).items():
                configmap = next(o for o in objects if o["kind"] == "ConfigMap"
                                 and o["metadata"]["name"] == f"spine-{service}-config")
                assert configmap["data"][key] == value, (bundle.name, service, key)


def test_rbac_objects_validate_and_pass_the_lint(bundles):
    for bundle, allow in bundles:
        objects = [yaml.safe_load(p.read_text()) for p in sorted((bundle / "rbac").glob("*.yaml"))]
        assert not validate_objects(objects, ("1.30", LATEST)), bundle.name
        assert not lint_rbac(objects, allow), bundle.name


def test_lint_catches_a_widened_role(bundles):
    bundle, allow = next((b, a) for b, a in bundles if (b / "rbac" / "role.yaml").exists())
    role = yaml.safe_load((bundle / "rbac" / "role.yaml").read_text())
    role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})
    assert lint_rbac([role], allow)
