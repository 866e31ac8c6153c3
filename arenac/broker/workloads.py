"""A workload (Deployment or StatefulSet) of the local cluster: its state and its object.

`deployment_object` renders the state as the API server would return it; `apply_template`
takes an edited object back (the result of a patch or an edit) and changes what the local
stack can change: replicas (only 1), the pod template's annotations, the container's image and
env, the object's own annotations. Any other difference is refused, naming the field.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class WorkloadError(ValueError):
    pass


@dataclass
class Workload:
    component: str
    kind: str  # Deployment | StatefulSet
    image: str  # the template's image
    release_name: str  # the chart's release (the substrate's name): objects are `<release_name>-<component>`
    created: float = 0.0
    running_image: str = ""  # what the running pod was started from
    env: list[dict[str, str]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)  # the pod template's
    meta_annotations: dict[str, str] = field(default_factory=dict)
    replicas: int = 1
    generation: int = 1
    revision: int = 1
    failure: str = ""  # why the newest template is not running ("" when it is)
    restarts: int = 0  # pods the broker replaced: the agent's rollouts and deleted pods (never the harness's)
    chart_version: str = field(default="", init=False)  # labels keep the version the chart installed

    def __post_init__(self) -> None:
        self.running_image = self.running_image or self.image
        self.chart_version = self.version

    @property
    def name(self) -> str:
        return f"{self.release_name}-{self.component}"

    @property
    def container(self) -> str:
        return self.component

    @property
    def version(self) -> str:
        return self.image.rpartition(":")[2]

    def env_map(self) -> dict[str, str]:
        return {item["name"]: item.get("value", "") for item in self.env}

    def set_env(self, changes: list[tuple[str, str | None]]) -> bool:
        env = [dict(item) for item in self.env]
        for name, value in changes:
            index = next((i for i, item in enumerate(env) if item["name"] == name), None)
            if value is None:
                if index is not None:
                    env.pop(index)
            elif index is None:
                env.append({"name": name, "value": value})
            else:
                env[index] = {"name": name, "value": value}
        changed = env != self.env
        self.env = env
        return changed


def selector(component: str, release_name: str) -> dict[str, str]:
    return {"app.kubernetes.io/component": component, "app.kubernetes.io/name": release_name}


def deployment_object(w: Workload, namespace: str, labels: Mapping[str, str], *, ready: bool,
                      created: str) -> dict[str, Any]:
    port = {"postgres": 5432, "redis": 6379}.get(w.component, 8080)
    container: dict[str, Any] = {"name": w.container, "image": w.image, "imagePullPolicy": "IfNotPresent",
                                 "ports": [{"containerPort": port, "protocol": "TCP"}]}
    if w.env:
        container["env"] = copy.deepcopy(w.env)
    template: dict[str, Any] = {"metadata": {"labels": dict(labels)}, "spec": {"containers": [container]}}
    if w.annotations:
        template["metadata"]["annotations"] = dict(w.annotations)
    updated = 0 if w.failure else 1
    available = 1 if ready and not (w.failure and w.running_image == w.image) else 0
    meta_annotations = dict(w.meta_annotations)
    spec: dict[str, Any] = {"replicas": w.replicas, "selector": {"matchLabels": selector(w.component, w.release_name)},
                            "template": template}
    status: dict[str, Any] = {"observedGeneration": w.generation, "replicas": 1, "updatedReplicas": updated,
                              "readyReplicas": available, "availableReplicas": available}
    if w.kind == "Deployment":
        meta_annotations["deployment.kubernetes.io/revision"] = str(w.revision)
        spec["strategy"] = {"type": "RollingUpdate",
                            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
        status["conditions"] = [
            {"type": "Available", "status": "True" if available else "False",
             "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable"},
            {"type": "Progressing", "status": "False" if w.failure else "True",
             "reason": "ProgressDeadlineExceeded" if w.failure else "NewReplicaSetAvailable",
             **({"message": w.failure} if w.failure else {})},
        ]
    else:
        spec["serviceName"] = w.name
        status["currentReplicas"] = 1
    return {"apiVersion": "apps/v1", "kind": w.kind,
            "metadata": {"name": w.name, "namespace": namespace, "labels": dict(labels),
                         "annotations": meta_annotations, "generation": w.generation, "creationTimestamp": created},
            "spec": spec, "status": status}


_VOLATILE_META = ("annotations", "generation", "resourceVersion", "creationTimestamp", "uid", "managedFields")


def _fixed_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What must not change: everything but the fields `apply_template` applies."""
    fixed = copy.deepcopy(dict(obj))
    fixed.pop("status", None)
    for key in _VOLATILE_META:
        fixed.get("metadata", {}).pop(key, None)
    spec = fixed.get("spec", {})
    spec.pop("replicas", None)
    template = spec.get("template", {})
    template.get("metadata", {}).pop("annotations", None)
    for container in template.get("spec", {}).get("containers", []) or []:
        if isinstance(container, dict):
            container.pop("image", None)
            container.pop("env", None)
    return fixed


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{path}.{key}" if path else key)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return path


def apply_template(w: Workload, current: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Take the changes of `new` (an edited `current`) into `w`; True when the pod template changed."""
    difference = _first_difference(_fixed_part(current), _fixed_part(new))
    if difference:
        raise WorkloadError(f'{w.kind.lower()} "{w.name}": the local backend cannot change {difference} '
                            "(it applies replicas, the pod template's annotations, and the container's image and env)")
    spec = new.get("spec") or {}
    replicas = spec.get("replicas", 1)
    if replicas != 1:
        raise WorkloadError(f'{w.kind.lower()} "{w.name}": the local backend runs exactly one replica of each '
                            f"workload; replicas={replicas} is not supported")
    template = spec.get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    container = ((template.get("spec") or {}).get("containers") or [{}])[0]
    image, env = container.get("image"), container.get("env") or []
    if not isinstance(image, str) or not image:
        raise WorkloadError("spec.template.spec.containers[0].image: Required value")
    for item in env:
        if not isinstance(item, dict) or "name" not in item or set(item) - {"name", "value"}:
            raise WorkloadError(f"env {item!r}: the local backend supports only {{name, value}} entries")
        if not isinstance(item.get("value", ""), str):
            raise WorkloadError(f"env {item['name']}: value must be a string")
    if not all(isinstance(v, str) for v in annotations.values()):
        raise WorkloadError("spec.template.metadata.annotations: values must be strings")
    meta = dict((new.get("metadata") or {}).get("annotations") or {})
    meta.pop("deployment.kubernetes.io/revision", None)
    w.meta_annotations = meta
    changed = (image, env, dict(annotations)) != (w.image, w.env, w.annotations)
    if changed:
        w.image, w.env, w.annotations = image, [dict(item) for item in env], dict(annotations)
        w.generation += 1
    return changed
