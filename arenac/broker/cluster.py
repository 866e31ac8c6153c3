"""LocalCluster: a Kubernetes-shaped view of one running LocalStack, for the brokered `kubectl`.

Contract (one namespace, the trial's; objects named as the chart names them, `<release_name>-<component>`
with the substrate's name as the release name: spine's below):
- ConfigMap `spine-<svc>-config` is the service's config file (patch/update rewrite the file;
  the process reads it at its next start, as a mounted ConfigMap needs a rollout);
  `spine-redis-config` holds `maxmemory`, `maxmemoryPolicy`, `appendonly`, `appendfsync` and
  `acl-USER` (the stack's config/redis.yaml, which the next Redis start reads);
  `spine-postgres-config` holds the init scripts (they ran at first start; edits change nothing).
- Deployment `spine-<svc>` and `spine-redis`, StatefulSet `spine-postgres`, one replica each.
  A change of the pod template (image, env, annotations: `set image`, `set env`,
  `rollout restart`, a patch) rolls the workload out: the service restarts with its new
  environment. The image `<repository>:<release>` is the release the service runs (the stack's
  stand-in for the image, which no env var can override: `set env SPINE_RELEASE=...` does not swap
  the code, as on Kubernetes where the image bakes its release in). An image the local stack does not
  have (an unknown release or repository) never starts: the workload reports ImagePullBackOff
  and the old process keeps serving, as a rolling update would. Replicas other than 1 are refused.
- Pods `spine-<svc>-<pid>` (`spine-postgres-0`): logs come from the stack's log file, from the
  start of the current process when the cluster restarted it; delete restarts the component;
  exec runs a command as `PodExec` describes, as `exec_user` (default: `nobody` when the broker
  runs as root, so that an exec never has the runner's privileges); the admin calls and Redis
  commands an exec makes are reported to `audit(tool, argv, allowed, reason)` when it is set.
- Services, ReplicaSets (one per Deployment: the current template) and Events (what the cluster
  did) are read-only. Mutations are serialised; reads are not.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from arenac.broker.cluster_events import ClusterEvents, timestamp
from arenac.broker.cluster_probes import http_ok, port_open, process_start
from arenac.broker.inflight import InFlight
from arenac.broker.podexec import ExecResult, PodExec, default_exec_user
from arenac.broker.rbac import DEFAULT_NAMESPACE
from arenac.broker.workloads import Workload, WorkloadError, apply_template, deployment_object, selector
from arenac.substrate.interface import LocalStack

DATASTORES = ("postgres", "redis")
# the keys of the chart's Redis ConfigMap (read at Redis' start), besides `acl-USER` (rules appended to a user's)
REDIS_CONFIGMAP_KEYS = ("maxmemory", "maxmemoryPolicy", "appendonly", "appendfsync")


class ClusterError(Exception):
    """A failed request, worded as kubectl prints it."""


def not_found(resource: str, group: str, name: str) -> ClusterError:
    qualified = f"{resource}.{group}" if group else resource
    return ClusterError(f'Error from server (NotFound): {qualified} "{name}" not found')


def labels(component: str, version: str, release_name: str) -> dict[str, str]:
    return {"app.kubernetes.io/component": component, "app.kubernetes.io/instance": release_name,
            "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": release_name,
            "app.kubernetes.io/version": version}


@dataclass
class LocalCluster:
    stack: LocalStack
    namespace: str = DEFAULT_NAMESPACE
    exec_user: str | None = field(default_factory=default_exec_user)  # None: the broker's own user
    created: float = field(default_factory=time.time)
    audit: Callable[[str, list[str], bool, str], None] | None = None
    inflight: InFlight = field(default_factory=InFlight)  # exec and db-sql processes; the freeze ends them
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    _workloads: dict[str, Workload] = field(default_factory=dict, init=False, repr=False)
    _versions: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _postgres_init: dict[str, str] | None = field(default=None, init=False, repr=False)
    _log_starts: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _events: ClusterEvents = field(default_factory=ClusterEvents, init=False, repr=False)

    def __post_init__(self) -> None:
        substrate, images = self.stack.substrate, self.stack.images()
        self.release_name = substrate.name  # the chart's release: every object is `<release>-<component>`
        self.services: tuple[str, ...] = substrate.services  # the application's: config files, releases
        self.components = (*self.services, *DATASTORES)
        started = [process_start(pid) for pid in self.stack.pids().values()]
        self.created = min([self.created, *started])
        name = self.release_name
        for component in self.services:
            version = images.releases[component]
            self._workloads[component] = Workload(component, "Deployment", f"{images.repository}:{version}", name,
                                                  created=self.created)
            self.stack.set_service_image(component, version)  # what the image carries
        self._workloads["redis"] = Workload("redis", "Deployment", images.datastores["redis"], name,
                                            created=self.created)
        self._workloads["postgres"] = Workload("postgres", "StatefulSet", images.datastores["postgres"], name,
                                               created=self.created)
        self.pod_exec = PodExec(self.namespace, substrate, self.exec_user,
                                audit=self._audit, inflight=self.inflight)

    def _audit(self, tool: str, argv: list[str], allowed: bool, reason: str) -> None:
        if self.audit is not None:
            self.audit(tool, argv, allowed, reason)

    # -- workloads ---------------------------------------------------------------------------
    def workload(self, resource: str, name: str) -> Workload:
        kind = {"deployments": "Deployment", "statefulsets": "StatefulSet"}.get(resource)
        found = next((w for w in self._workloads.values() if w.name == name and w.kind == kind), None)
        if found is None:
            raise not_found(resource, "apps", name)
        return found

    def workloads(self, resource: str) -> list[Workload]:
        kind = {"deployments": "Deployment", "statefulsets": "StatefulSet"}[resource]
        return [w for w in self._workloads.values() if w.kind == kind]

    def workload_object(self, w: Workload) -> dict[str, Any]:
        ready = self._ready(w.component)
        return deployment_object(w, self.namespace, labels(w.component, w.chart_version, self.release_name),
                                 ready=ready, created=timestamp(w.created))

    def change_workload(self, w: Workload, current: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Apply an edited workload object (`current` after a patch or edit); True when it rolled out."""
        with self._lock:
            try:
                template_changed = apply_template(w, current, new)
            except WorkloadError as exc:
                raise ClusterError(f"error: {exc}") from None
            if template_changed:
                self._rollout(w)
            return template_changed

    def restart_workload(self, w: Workload) -> None:
        with self._lock:
            w.annotations["kubectl.kubernetes.io/restartedAt"] = timestamp(time.time())
            w.generation += 1
            self._rollout(w)

    def agent_restarts(self) -> dict[str, int]:
        with self._lock:
            return {component: w.restarts for component, w in sorted(self._workloads.items())}

    def rollout_done(self, w: Workload) -> tuple[bool, str]:
        if w.failure:
            return False, w.failure
        if w.component in self.stack.exited():
            return False, "the new pod is not running"
        if not self._ready(w.component):
            return False, "the new pod is not ready"
        return True, ""

    def _rollout(self, w: Workload) -> None:
        w.revision += 1
        self.event(w.kind, w.name, "Normal", "ScalingReplicaSet",
                   f"Scaled up replica set {self.replicaset_name(w)} to 1")
        unavailable = self._image_problem(w)
        if unavailable:
            w.failure = f'ImagePullBackOff: Back-off pulling image "{w.image}": {unavailable}'
            self.event("Pod", f"{w.name}-{self._template_hash(w)[:5]}", "Warning", "Failed",
                       f'Failed to pull image "{w.image}": {unavailable}')
            return
        if w.component in self.services:
            self.stack.set_service_image(w.component, w.version)
            self.stack.set_service_env(w.component, w.env_map())
        self._restart(w)
        if not w.failure:
            w.running_image = w.image

    def _image_problem(self, w: Workload) -> str:
        images, releases = self.stack.images(), self.stack.substrate.releases
        if w.component in self.services:
            repository, _, tag = w.image.rpartition(":")
            if repository != images.repository or tag not in releases:
                return f"{w.image}: not found (the local stack has {images.repository}:{{{','.join(releases)}}})"
            return ""
        wanted = images.datastores[w.component]
        return "" if w.image == wanted else f"{w.image}: not found (the local stack runs {wanted})"

    def _restart(self, w: Workload) -> None:
        w.restarts += 1
        old = self.pod_name(w.component)
        log = self.stack.log_path(w.component)
        start = log.stat().st_size if log.exists() else 0
        self.event("Pod", old, "Normal", "Killing", f"Stopping container {w.container}")
        try:
            self.stack.restart_service(w.component)
            w.failure = ""
        except (RuntimeError, TimeoutError, OSError) as exc:
            w.failure = f"CrashLoopBackOff: {str(exc).splitlines()[0]}"
            self.event("Pod", old, "Warning", "BackOff", "Back-off restarting failed container")
        pid = self.stack.pids().get(w.component)
        if pid is not None:
            self._log_starts[pid] = start
        if not w.failure:
            self.event("Pod", self.pod_name(w.component), "Normal", "Started", f"Started container {w.container}")

    def replicaset_name(self, w: Workload) -> str:
        return f"{w.name}-{self._template_hash(w)}"

    def _template_hash(self, w: Workload) -> str:
        digest = hashlib.sha256(json.dumps([w.image, w.env, w.annotations], sort_keys=True).encode()).digest()
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        return "".join(alphabet[b % len(alphabet)] for b in digest[:10])

    # -- pods --------------------------------------------------------------------------------
    def pod_name(self, component: str) -> str:
        if component == "postgres":
            return f"{self.release_name}-postgres-0"
        return f"{self.release_name}-{component}-{self.stack.pids().get(component, 0)}"

    def pod_component(self, name: str) -> str:
        for component in self.components:
            if self.pod_name(component) == name:
                return component
        raise not_found("pods", "", name)

    def pods(self) -> list[str]:
        return [self.pod_name(component) for component in self.components]

    def pod_object(self, component: str) -> dict[str, Any]:
        w = self._workloads[component]
        pid = self.stack.pids().get(component)
        alive = component not in self.stack.exited() and pid is not None
        ready = alive and self._ready(component)
        started = process_start(pid) if alive else self.created
        state: dict[str, Any] = ({"running": {"startedAt": timestamp(started)}} if alive else
                                 {"waiting": {"reason": "CrashLoopBackOff", "message": w.failure}})
        pod_labels = labels(component, w.chart_version, self.release_name)
        if w.kind == "Deployment":
            pod_labels["pod-template-hash"] = self._template_hash(w)
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": self.pod_name(component), "namespace": self.namespace, "labels": pod_labels,
                         "creationTimestamp": timestamp(started),
                         "ownerReferences": [{"apiVersion": "apps/v1", "controller": True,
                                              "kind": "ReplicaSet" if w.kind == "Deployment" else "StatefulSet",
                                              "name": self.replicaset_name(w) if w.kind == "Deployment" else w.name}]},
            "spec": {"containers": [{"name": w.container, "image": w.running_image, "env": list(w.env)}],
                     "nodeName": "local", "serviceAccountName": "default"},
            "status": {
                "phase": "Running" if alive else "Failed", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
                "startTime": timestamp(started),
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [{"name": w.container, "image": w.running_image, "ready": ready,
                                       "restartCount": 0, "started": alive, "state": state}],
            },
        }

    def delete_pod(self, name: str) -> None:
        component = self.pod_component(name)
        with self._lock:
            self._restart(self._workloads[component])

    def pod_logs(self, name: str, tail: int | None = None) -> str:
        component = self.pod_component(name)
        path = self.stack.log_path(component)
        if not path.exists():
            return ""
        with open(path, "rb") as log:
            log.seek(self._log_starts.get(self.stack.pids().get(component, -1), 0))
            text = log.read().decode(errors="replace")
        if tail is not None and tail >= 0:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-tail:] if tail else [])
        return text

    def exec(self, name: str, argv: Sequence[str], stdin: bytes | None, timeout: float) -> ExecResult:
        component = self.pod_component(name)
        assert self.stack.endpoints is not None
        return self.pod_exec.run(component, name, argv, self.stack.endpoints, stdin=stdin, timeout=timeout,
                                 extra_env=self._workloads[component].env_map())

    def _ready(self, component: str) -> bool:
        endpoints = self.stack.endpoints
        if endpoints is None or component in self.stack.exited():
            return False
        if component in self.services:
            url = endpoints.services[component]
            return http_ok(url + "/readyz")
        url = endpoints.postgres_dsn if component == "postgres" else endpoints.redis
        return port_open(urlsplit(url).port or 0)

    # -- config maps -------------------------------------------------------------------------
    def configmap_names(self) -> list[str]:
        return [f"{self.release_name}-{component}-config" for component in self.components]

    def configmap_data(self, name: str) -> dict[str, str]:
        component = self._configmap_component(name)
        if component in self.services:
            return self.stack.substrate.read_config(self.stack.config_path(component))
        if component == "redis":  # the stack keeps it as a file in the services' format (next Redis start)
            return self.stack.substrate.read_config(self.stack.config_path(component))
        if self._postgres_init is None:
            self._postgres_init = self.stack.substrate.datastore_init()
        return dict(self._postgres_init)

    def configmap_object(self, name: str) -> dict[str, Any]:
        component = self._configmap_component(name)
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.namespace,
                             "labels": labels(component, self._workloads[component].chart_version, self.release_name),
                             "resourceVersion": str(1000 + self._versions.get(name, 0)),
                             "creationTimestamp": timestamp(self.created)},
                "data": self.configmap_data(name)}

    def write_configmap(self, name: str, data: Mapping[str, Any]) -> bool:
        """Replace a ConfigMap's data; returns whether it changed."""
        bad = [key for key, value in data.items() if not isinstance(value, str)]
        if bad:
            raise ClusterError(f'Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a '
                               f"ConfigMap: json: cannot unmarshal {type(data[bad[0]]).__name__} into Go struct "
                               f"field ConfigMap.data of type string")
        component = self._configmap_component(name)
        with self._lock:
            if dict(data) == self.configmap_data(name):
                return False
            if component in self.services:  # in the substrate's own format, which it reads back
                self.stack.substrate.write_config(self.stack.config_path(component), dict(data))
            elif component == "redis":
                self._write_redis_conf(data)
            else:
                self._postgres_init = dict(data)
            self._versions[name] = self._versions.get(name, 0) + 1
            return True

    def _configmap_component(self, name: str) -> str:
        for component in self.components:
            if name == f"{self.release_name}-{component}-config":
                return component
        raise not_found("configmaps", "", name)

    def _write_redis_conf(self, data: Mapping[str, str]) -> None:
        unknown = sorted(key for key in data if key not in REDIS_CONFIGMAP_KEYS and not key.startswith("acl-"))
        if unknown:
            raise ClusterError(f"error: {self.release_name}-redis-config: unknown key(s) {', '.join(unknown)} "
                               f"(the chart reads {', '.join(REDIS_CONFIGMAP_KEYS)} and acl-USER)")
        self.stack.substrate.write_config(self.stack.config_path("redis"), dict(data))

    # -- listing -----------------------------------------------------------------------------
    def objects(self, resource: str) -> list[dict[str, Any]] | None:
        """Every object of a resource type the cluster models, in this namespace; None if it does not."""
        if resource == "namespaces":
            return [{"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"},
                     "metadata": {"name": self.namespace, "creationTimestamp": timestamp(self.created)}}]
        if resource == "pods":
            return [self.pod_object(component) for component in self.components]
        if resource == "configmaps":
            return [self.configmap_object(name) for name in self.configmap_names()]
        if resource in ("deployments", "statefulsets"):
            return [self.workload_object(w) for w in self.workloads(resource)]
        if resource == "replicasets":
            return [self.replicaset_object(w) for w in self.workloads("deployments")]
        if resource == "services":
            return [self.service_object(component) for component in self.components]
        if resource == "events":
            return self.event_objects()
        return None

    # -- events and services -----------------------------------------------------------------
    def event(self, kind: str, name: str, type_: str, reason: str, message: str) -> None:
        self._events.record(kind, name, type_, reason, message)

    def event_objects(self, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        return self._events.objects(self.namespace, kind, name)

    def service_object(self, component: str) -> dict[str, Any]:
        port, port_name = (5432, "postgres") if component == "postgres" else (6379, "redis") if component == "redis" \
            else (8080, "http")
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": f"{self.release_name}-{component}", "namespace": self.namespace,
                             "labels": labels(component, self._workloads[component].chart_version, self.release_name),
                             "creationTimestamp": timestamp(self.created)},
                "spec": {"type": "ClusterIP", "clusterIP": f"10.96.0.{10 + self.components.index(component)}",
                         "ports": [{"name": port_name, "port": port, "protocol": "TCP", "targetPort": port_name}],
                         "selector": selector(component, self.release_name)}}

    def replicaset_object(self, w: Workload) -> dict[str, Any]:
        ready = 1 if self._ready(w.component) and not w.failure else 0
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": self.replicaset_name(w), "namespace": self.namespace,
                             "labels": {**labels(w.component, w.chart_version, self.release_name),
                                        "pod-template-hash": self._template_hash(w)},
                             "creationTimestamp": timestamp(w.created),
                             "annotations": {"deployment.kubernetes.io/revision": str(w.revision)},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name,
                                                  "controller": True}]},
                "spec": {"replicas": w.replicas},
                "status": {"replicas": 1, "readyReplicas": ready, "availableReplicas": ready}}
