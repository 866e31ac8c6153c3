"""The local backend's substrate configuration, taken from the bundle's own chart.

The chart is rendered with real Helm; the ConfigMaps, images (releases) and datastore settings
it produces become the local stack's spec, so what runs here is what a cluster would get.
The healthy control renders the vendored substrate chart without the faults' overlay: with the
task's healthy settings (`chart/healthy-values.yaml`, written for a task with a `healthy { }`
block) as its values when the bundle has them, alone otherwise.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from arenac.k8s.helm import render_chart
from arenac.model.plan import HEALTHY_VALUES
from arenac.substrate.spine.spec import ACL_KEY_PREFIX, SpineSpec

_NOT_KNOBS = ("RELEASE", "TIME_SCALE")
_SETTING = re.compile(r"^[a-z][a-z0-9_]*$")


def spine_spec(bundle_dir: Path, time_scale: float, healthy: bool = False) -> SpineSpec:
    if healthy:
        overlay = bundle_dir / HEALTHY_VALUES
        settings = yaml.safe_load(overlay.read_text(encoding="utf-8")) if overlay.is_file() else None
        objects = render_chart(bundle_dir / "chart" / "charts" / "spine", settings or None)
    else:
        objects = render_chart(bundle_dir / "chart")
    values: dict = {"timeScale": f"{time_scale:g}", "services": {}}
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ConfigMap" and name.startswith("spine-") and name.endswith("-config"):
            component = name[len("spine-"):-len("-config")]
            data = obj.get("data") or {}
            if component == "redis":
                values["redis"] = redis_values(data)
            elif component == "postgres":
                # the ConfigMap also carries init scripts; settings are the bare parameter names
                values["postgres"] = {"settings": {k: v for k, v in data.items() if _SETTING.match(k)}}
            else:
                values["services"].setdefault(component, {})["config"] = {
                    k: v for k, v in data.items() if k not in _NOT_KNOBS}
        elif obj["kind"] == "Deployment" and name.startswith("spine-"):
            component = name[len("spine-"):]
            if component == "redis":
                continue
            container = obj["spec"]["template"]["spec"]["containers"][0]
            service = values["services"].setdefault(component, {})
            service["release"] = container["image"].rsplit(":", 1)[1]
            service["replicas"] = obj["spec"].get("replicas", 1)
    return SpineSpec.from_values(values)


def redis_values(data: dict[str, str]) -> dict[str, object]:
    """The chart's `redis` values back from its ConfigMap's data (what the container reads at start)."""
    values: dict[str, object] = {
        "maxmemory": data["maxmemory"],
        "maxmemoryPolicy": data.get("maxmemory-policy", data.get("maxmemoryPolicy", "noeviction")),
        "acl": {key.removeprefix(ACL_KEY_PREFIX): rules for key, rules in data.items()
                if key.startswith(ACL_KEY_PREFIX)}}
    values.update({key: data[key] for key in ("appendonly", "appendfsync") if key in data})
    return values
