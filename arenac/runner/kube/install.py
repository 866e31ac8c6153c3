"""A trial's substrate on the cluster: the bundle's chart installed into the trial's namespaces,
waited for, and uninstalled.

How the chart is installed, and why. The issue asks for Helm through helm-python-sdk, which does
have a real install and uninstall (`helm_python.Config(...).install(chart, release, values,
namespace=..., wait=..., timeout=...)`, `.uninstall(release)`, Helm v4's own actions). They cannot
run against the fake API server the tests use (kmock, tests/helpers/fake_kube.py): Helm validates
the release's manifest against the server's OpenAPI document (`/openapi/v3`, `/openapi/v2`:
404 on the fake, so the install fails with "failed to download openapi"), and, with that
validation off (an option the library's C ABI reads, `disable_openapi_validation`, that its Python
`install` does not pass), maps each kind through discovery, where the fake lists no kinds ("no
matches for kind ServiceAccount in version v1"). So the install here renders the chart with Helm's
own engine (arenac/k8s/helm.py's `render_chart`, the same values coalescing as an install) and
creates the rendered objects with the official `kubernetes` client in Helm's install order. The
one seam is `Installer`: `install_chart(..., installer=create_rendered)` is the default, and a
real cluster can take helm_install.py's `helm_installer`, Helm's own install action of the same
`InstallPlan` (its chart, values and release). Either way nothing else changes: `wait_ready` and
`uninstall` read the cluster, not a Helm release.

Contract:

- `RunnerValues` are the only values the runner overrides (issue 13: what the runner owns): the
  harness namespace (`harness.namespace`), the time scale (`harness.timeScale` and the substrate
  subchart's `timeScale`), the images (`harness.image`, the substrate's `image.repository`) and
  whether the chart's fault-init Job runs (`harness.faultInit.enabled`) and its load generator
  (`harness.loadgen.enabled`: a bundle compiled before that value has no switch;
  `has_loadgen_switch(chart_dir)` tells); and whether the install
  is the healthy control (`healthy`, below). `runner_values(chart_dir,
  harness_namespace, values)` is those values as Helm values; a path the chart's `values.yaml`
  (or its substrate subchart's, the subchart named by `harness.substrate`) does not have raises
  `KubeError` rather than being silently added.
- The healthy control (`healthy`) installs what the local backend's healthy control runs
  (substrate/spine/local_config.py: the subchart alone, with the task's healthy settings,
  `chart/healthy-values.yaml`, when it has any): the chart is rendered from a copy whose values for
  the substrate subchart are those settings alone, the faults' overlay left out (`InstallPlan.healthy`
  says so). Not by overriding values: Helm's coalescing cannot take a key out of a parent chart's
  values for a subchart (a null is kept as a null value when the subchart has no default, and
  removes a whole mapping with its defaults). Rendered, the substrate's objects are the local
  healthy control's, byte for byte (tests/runner/kube/test_healthy_install.py, every bundle of
  tasks/). The rest of the chart (the harness's objects, the RBAC) is the same either way.
- `install_plan(chart_dir, application, harness, values, plan_json)` renders the chart (release
  `arenac`, `.Release.Namespace` the application namespace) and places each object: in its own
  `metadata.namespace` or, without one, the application namespace. Refused with `KubeError`, before
  anything is created: a cluster-scoped kind (a Namespace, a ClusterRole, ...), a kind or
  apiVersion the runner does not install (its scope unknown), and an object in any namespace but
  the trial's two. With `plan_json`, the plan ConfigMap the chart's harness pods mount
  (`harness.planConfigMap`, key `plan.json`) is added in the harness namespace. The objects are
  sorted in Helm's install order (`INSTALL_ORDER`, below), stably: within a kind, by namespace
  and name.
- `install_chart(api, chart_dir, application, harness, values, timeout_s, poll_s, plan_json,
  installer)` creates the plan's objects in that order (`create_objects`, which the harness pod's
  objects use too), each into its namespace (which must
  exist: namespaces.create_trial_namespaces), then `wait_ready` on both namespaces for what is left
  of `timeout_s`. Any API error while creating raises `InstallFailed` naming the object and what
  was created before it; the wait raises `InstallTimeout` or `WorkloadFailed` (workloads.py).
  Nothing is cleaned up here: the caller calls `uninstall`, which needs no record of what was
  created.
- `uninstall(api, application, harness, timeout_s, poll_s)` deletes every object of the kinds the
  runner installs (and the Pods and ReplicaSets the workloads made) from both namespaces, in Helm's
  uninstall order (but the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap Kubernetes
  puts in every namespace), then the namespaces themselves (namespaces.delete_namespaces: deleted and waited
  for). Everything in a trial's namespaces is the trial's, so it lists rather than remembers: it is
  safe after a partial install (an object created although its request failed included), and
  safe to call again (already gone is not an error). Bounded by `timeout_s` overall.
- Requests: only under `/api/v1/namespaces/{application|harness}/...` and
  `/apis/GROUP/VERSION/namespaces/{application|harness}/...`, and the two namespaces themselves.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from arenac.k8s.helm import HelmRenderError, render_chart
from arenac.model.plan import HEALTHY_VALUES
from arenac.runner.kube.api import KubeError, describe, k8s, status_of
from arenac.runner.kube.namespaces import delete_namespaces
from arenac.runner.kube.workloads import REQUEST_TIMEOUT_S, InstallTimeout, Ready, wait_ready

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

RELEASE = "arenac"

# Helm's install and uninstall order, by kind: `InstallOrder` and `UninstallOrder` of
# pkg/release/v1/util/kind_sorter.go in helm/helm (Helm v4, the SDK helm-python-sdk binds; Helm 3's
# pkg/releaseutil/kind_sorter.go has the same list). Kinds Helm does not list come last, by name; the
# runner refuses those anyway (below).
INSTALL_ORDER = (
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
    "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
    "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList",
    "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
    "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
)
UNINSTALL_ORDER = (
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "Ingress", "IngressClass",
    "Service", "CronJob", "Job", "StatefulSet", "HorizontalPodAutoscaler", "Deployment", "ReplicaSet",
    "ReplicationController", "Pod", "DaemonSet", "RoleBindingList", "RoleBinding", "RoleList", "Role",
    "ClusterRoleBindingList", "ClusterRoleBinding", "ClusterRoleList", "ClusterRole", "CustomResourceDefinition",
    "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "ConfigMap", "SecretList", "Secret",
    "ServiceAccount", "PodDisruptionBudget", "PodSecurityPolicy", "LimitRange", "ResourceQuota", "NetworkPolicy",
    "Namespace", "PriorityClass",
)
CLUSTER_SCOPED = frozenset({
    "PriorityClass", "Namespace", "PodSecurityPolicy", "StorageClass", "PersistentVolume",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList",
    "IngressClass", "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Node",
    "CSIDriver", "RuntimeClass", "VolumeAttachment",
})


@dataclass(frozen=True)
class Kind:
    """A namespaced kind the runner creates, lists and deletes, and the client's calls for it."""

    api_version: str
    api: str  # the client's class (CoreV1Api, ...)
    resource: str  # the suffix of its methods: create_namespaced_<resource>, ...


KINDS: dict[str, Kind] = {
    "NetworkPolicy": Kind("networking.k8s.io/v1", "NetworkingV1Api", "network_policy"),
    "ResourceQuota": Kind("v1", "CoreV1Api", "resource_quota"),
    "LimitRange": Kind("v1", "CoreV1Api", "limit_range"),
    "PodDisruptionBudget": Kind("policy/v1", "PolicyV1Api", "pod_disruption_budget"),
    "ServiceAccount": Kind("v1", "CoreV1Api", "service_account"),
    "Secret": Kind("v1", "CoreV1Api", "secret"),
    "ConfigMap": Kind("v1", "CoreV1Api", "config_map"),
    "PersistentVolumeClaim": Kind("v1", "CoreV1Api", "persistent_volume_claim"),
    "Role": Kind("rbac.authorization.k8s.io/v1", "RbacAuthorizationV1Api", "role"),
    "RoleBinding": Kind("rbac.authorization.k8s.io/v1", "RbacAuthorizationV1Api", "role_binding"),
    "Service": Kind("v1", "CoreV1Api", "service"),
    "DaemonSet": Kind("apps/v1", "AppsV1Api", "daemon_set"),
    "Pod": Kind("v1", "CoreV1Api", "pod"),
    "ReplicaSet": Kind("apps/v1", "AppsV1Api", "replica_set"),
    "Deployment": Kind("apps/v1", "AppsV1Api", "deployment"),
    "HorizontalPodAutoscaler": Kind("autoscaling/v2", "AutoscalingV2Api", "horizontal_pod_autoscaler"),
    "StatefulSet": Kind("apps/v1", "AppsV1Api", "stateful_set"),
    "Job": Kind("batch/v1", "BatchV1Api", "job"),
    "CronJob": Kind("batch/v1", "BatchV1Api", "cron_job"),
    "Ingress": Kind("networking.k8s.io/v1", "NetworkingV1Api", "ingress"),
}
# a deleted workload's pods go with it, not after it (Helm deletes with background propagation too)
_PROPAGATION = "Background"
# what Kubernetes itself puts in every namespace: not the trial's, and recreated if deleted
_NAMESPACE_DEFAULTS = frozenset({("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")})


@dataclass(frozen=True)
class RunnerValues:
    """What the runner sets in a bundle's chart; None leaves the chart's value."""

    time_scale: float | None = None
    harness_image: str | None = None
    substrate_image_repository: str | None = None
    fault_init: bool | None = None
    loadgen: bool | None = None  # the chart's load generator (`harness.loadgen.enabled`)
    healthy: bool = False  # the healthy control: the substrate without the faults' overlay


@dataclass(frozen=True)
class PlacedObject:
    kind: str
    namespace: str
    name: str
    body: dict[str, Any] = field(repr=False)  # the rendered object, its metadata.namespace set

    @property
    def key(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class InstallPlan:
    release: str
    application: str
    harness: str
    values: dict[str, Any]  # the overrides given to Helm, coalesced over the chart's values
    objects: tuple[PlacedObject, ...]  # in install order
    healthy: bool = False  # rendered from the chart with the substrate's overlay replaced (the healthy control)
    chart: Path | None = None  # the bundle's chart directory it was rendered from
    added: tuple[str, ...] = ()  # keys of the objects the runner adds beside the chart's (the plan ConfigMap)


@dataclass(frozen=True)
class Installed:
    plan: InstallPlan
    created: tuple[str, ...]  # "Kind namespace/name", in the order created
    ready: Ready


@dataclass(frozen=True)
class Uninstalled:
    deleted: tuple[str, ...]  # "Kind namespace/name", in the order deleted
    namespaces: tuple[str, ...]


class InstallFailed(KubeError):
    """An object of the chart could not be created."""

    def __init__(self, message: str, created: tuple[str, ...]) -> None:
        super().__init__(message)
        self.created = created


# The seam: what creates a plan's objects on the cluster (see the module's docstring).
Installer = Callable[["ApiClient", InstallPlan, float], tuple[str, ...]]


def runner_values(chart_dir: Path, harness_namespace: str, values: RunnerValues) -> dict[str, Any]:
    chart_values = _values_yaml(chart_dir / "values.yaml")
    harness = chart_values.get("harness")
    if not isinstance(harness, dict) or not isinstance(harness.get("substrate"), str):
        raise KubeError(f"{chart_dir.name}/values.yaml has no harness.substrate: not a bundle's chart")
    substrate = harness["substrate"]
    subchart = _values_yaml(chart_dir / "charts" / substrate / "values.yaml")
    wanted: list[tuple[tuple[str, ...], Any, dict[str, Any]]] = [
        (("harness", "namespace"), harness_namespace, chart_values)]
    if values.time_scale is not None:
        scale = repr(float(values.time_scale))  # the chart's values are strings: '1.0', '0.1'
        wanted += [(("harness", "timeScale"), scale, chart_values), ((substrate, "timeScale"), scale, subchart)]
    if values.harness_image is not None:
        wanted.append((("harness", "image"), values.harness_image, chart_values))
    if values.substrate_image_repository is not None:
        wanted.append(((substrate, "image", "repository"), values.substrate_image_repository, subchart))
    if values.fault_init is not None:
        wanted.append((("harness", "faultInit", "enabled"), values.fault_init, chart_values))
    if values.loadgen is not None:
        wanted.append((("harness", "loadgen", "enabled"), values.loadgen, chart_values))
    overrides: dict[str, Any] = {}
    for path, value, where in wanted:
        # a subchart's paths are read in its own values.yaml, without the leading subchart name
        inside = path[1:] if where is subchart else path
        if not _has(where, inside):
            raise KubeError(f"the chart has no value {'.'.join(path)}: the runner overrides only values it has")
        node = overrides
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return overrides


@contextmanager
def _healthy_chart(chart_dir: Path) -> Iterator[Path]:
    """A copy of the chart whose values for the substrate subchart are the task's healthy settings
    alone (see the module's contract), removed on exit."""
    chart_values = _values_yaml(chart_dir / "values.yaml")
    substrate = chart_values["harness"]["substrate"]  # runner_values checked it is there
    healthy_file = chart_dir.parent / HEALTHY_VALUES
    chart_values[substrate] = _values_yaml(healthy_file) if healthy_file.is_file() else {}
    with tempfile.TemporaryDirectory(prefix="arenac-healthy-chart-") as scratch:
        copy = Path(scratch) / chart_dir.name
        shutil.copytree(chart_dir, copy, symlinks=False)
        (copy / "values.yaml").write_text(yaml.safe_dump(chart_values, sort_keys=True), encoding="utf-8")
        yield copy


def install_plan(chart_dir: Path, application: str, harness: str, values: RunnerValues | None = None,
                 plan_json: bytes | None = None) -> InstallPlan:
    values = values or RunnerValues()
    overrides = runner_values(chart_dir, harness, values)
    try:
        with _chart_for(chart_dir, values.healthy) as rendered_from:
            rendered = render_chart(rendered_from, overrides, release=RELEASE, namespace=application)
    except HelmRenderError as error:
        raise KubeError(f"cannot render the chart: {error.message}") from error
    added: tuple[str, ...] = ()
    if plan_json is not None:
        plan_map = _plan_config_map(chart_dir, harness, plan_json)
        rendered.append(plan_map)
        added = (f"ConfigMap {harness}/{plan_map['metadata']['name']}",)
    refused = [why for obj in rendered if (why := _refusal(obj, application, harness)) is not None]
    if refused:
        raise KubeError("the chart is not installed, nothing was created: " + "; ".join(refused))
    placed = [place_object(obj, application) for obj in rendered]
    ordered = sorted(placed, key=lambda o: (_order(o.kind, INSTALL_ORDER), o.namespace, o.name))
    return InstallPlan(RELEASE, application, harness, overrides, tuple(ordered), values.healthy, chart_dir, added)


def chart_of(plan: InstallPlan) -> AbstractContextManager[Path]:
    """The chart directory the plan was rendered from, to use in a `with`: the bundle's, or for the
    healthy control a copy with the substrate's overlay replaced (removed on exit)."""
    if plan.chart is None:
        raise KubeError("the install plan names no chart")
    return _chart_for(plan.chart, plan.healthy)


def _chart_for(chart_dir: Path, healthy: bool) -> AbstractContextManager[Path]:
    return _healthy_chart(chart_dir) if healthy else nullcontext(chart_dir)


def create_rendered(api: ApiClient, plan: InstallPlan, timeout_s: float) -> tuple[str, ...]:
    """The default `Installer`: each object created with the official client, in the plan's order."""
    return create_objects(api, plan.objects, timeout_s, "the install")


def create_objects(api: ApiClient, objects: Sequence[PlacedObject], timeout_s: float, what: str,
                   failed: type[InstallFailed] = InstallFailed) -> tuple[str, ...]:
    """Each object created in the order given, within `timeout_s`; the first failure raises `failed`
    naming the object and carrying what was created before it (`what`: whose objects, for the message)."""
    deadline = time.monotonic() + timeout_s
    created: list[str] = []
    for obj in objects:
        kind = KINDS[obj.kind]
        create = getattr(getattr(k8s(), kind.api)(api), f"create_namespaced_{kind.resource}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise failed(f"{what} ran out of its {timeout_s:g} s before creating {obj.key}", tuple(created))
        try:
            create(obj.namespace, obj.body, _request_timeout=max(1.0, min(REQUEST_TIMEOUT_S, left)))
        except Exception as error:
            before = f" (after creating {len(created)} objects)" if created else ""
            raise failed(f"cannot create {obj.key}: {describe(error)}{before}", tuple(created)) from error
        created.append(obj.key)
    return tuple(created)


def install_chart(api: ApiClient, chart_dir: Path, application: str, harness: str,
                  values: RunnerValues | None = None, timeout_s: float = 300.0, poll_s: float = 1.0,
                  plan_json: bytes | None = None, installer: Installer = create_rendered) -> Installed:
    start = time.monotonic()
    plan = install_plan(chart_dir, application, harness, values, plan_json)
    created = installer(api, plan, timeout_s)
    left = max(0.0, timeout_s - (time.monotonic() - start))
    try:
        ready = wait_ready(api, (application, harness), timeout_s=left, poll_s=poll_s)
    except InstallTimeout as error:  # said with the install's own bound, of which the wait had the rest
        raise InstallTimeout(f"the install is not ready within its {timeout_s:g} s: "
                             + "; ".join(n.line() for n in error.not_ready), error.not_ready) from error
    return Installed(plan, created, ready)


def uninstall(api: ApiClient, application: str, harness: str, timeout_s: float = 300.0,
              poll_s: float = 1.0) -> Uninstalled:
    deadline = time.monotonic() + timeout_s
    deleted: list[str] = []
    for kind_name in sorted(KINDS, key=lambda k: _order(k, UNINSTALL_ORDER)):
        kind = KINDS[kind_name]
        client = getattr(k8s(), kind.api)(api)
        for namespace in (application, harness):
            for name in _names(client, kind, kind_name, namespace, deadline):
                if (kind_name, name) in _NAMESPACE_DEFAULTS:
                    continue
                if _delete(client, kind, kind_name, namespace, name, deadline):
                    deleted.append(f"{kind_name} {namespace}/{name}")
    left = max(0.0, deadline - time.monotonic())
    gone = delete_namespaces(api, [application, harness], timeout_s=left, poll_s=poll_s)
    return Uninstalled(tuple(deleted), gone)


def _request_timeout(deadline: float) -> float:
    return max(1.0, min(REQUEST_TIMEOUT_S, deadline - time.monotonic()))


def _names(client: Any, kind: Kind, kind_name: str, namespace: str, deadline: float) -> list[str]:
    try:
        items = getattr(client, f"list_namespaced_{kind.resource}")(
            namespace, _request_timeout=_request_timeout(deadline)).items
    except Exception as error:
        if status_of(error) == 404:  # the namespace is gone, or the cluster serves no such kind: none of it
            return []
        raise KubeError(f"cannot list the {kind_name}s of {namespace}: {describe(error)}") from error
    return sorted(item.metadata.name for item in items)


def _delete(client: Any, kind: Kind, kind_name: str, namespace: str, name: str, deadline: float) -> bool:
    try:
        getattr(client, f"delete_namespaced_{kind.resource}")(
            name, namespace, propagation_policy=_PROPAGATION, _request_timeout=_request_timeout(deadline))
        return True
    except Exception as error:
        if status_of(error) == 404:
            return False
        raise KubeError(f"cannot delete {kind_name} {namespace}/{name}: {describe(error)}") from error


def has_loadgen_switch(chart_dir: Path) -> bool:
    """Whether the chart's load generator can be left out by a value (`harness.loadgen.enabled`)."""
    return _has(_values_yaml(chart_dir / "values.yaml"), ("harness", "loadgen", "enabled"))


def _values_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise KubeError(f"cannot read the chart's {path.parent.name}/{path.name}: {error}") from error
    return loaded if isinstance(loaded, dict) else {}


def _has(values: dict[str, Any], path: Sequence[str]) -> bool:
    node: Any = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _plan_config_map(chart_dir: Path, harness: str, plan_json: bytes) -> dict[str, Any]:
    name = (_values_yaml(chart_dir / "values.yaml").get("harness") or {}).get("planConfigMap")
    if not isinstance(name, str):
        raise KubeError("the chart names no harness.planConfigMap: nowhere to put the plan")
    try:
        text = plan_json.decode("utf-8")
        json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        raise KubeError(f"the plan is not JSON: {error}") from error
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": harness, "labels": {"app.kubernetes.io/managed-by": "arenac"}},
            "data": {"plan.json": text}}


def _refusal(obj: dict[str, Any], application: str, harness: str) -> str | None:
    kind, api_version, name = obj["kind"], obj["apiVersion"], obj["metadata"]["name"]
    if kind in CLUSTER_SCOPED:
        return f"{kind} {name} is cluster-scoped: a trial creates nothing outside its namespaces"
    known = KINDS.get(kind)
    if known is None or known.api_version != api_version:
        return f"{kind} {name} ({api_version}) is not a kind the runner installs (its scope is not known)"
    namespace = obj["metadata"].get("namespace") or application
    if namespace not in (application, harness):
        return f"{kind} {name} names namespace {namespace}, not one of the trial's ({application}, {harness})"
    return None


def place_object(obj: dict[str, Any], application: str) -> PlacedObject:
    """A rendered object as the install creates it: in its own namespace or, without one, the
    application's (also how helm_install.py reads Helm's manifest)."""
    metadata = obj["metadata"]
    namespace = metadata.get("namespace") or application
    body = {**obj, "metadata": {**metadata, "namespace": namespace}}
    return PlacedObject(obj["kind"], namespace, metadata["name"], body)


def _order(kind: str, order: Sequence[str]) -> tuple[int, str]:
    return (order.index(kind), "") if kind in order else (len(order), kind)
