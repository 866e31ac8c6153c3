"""A trial's workloads on the cluster: waiting until they are ready, and the restart challenge.

Contract:

- `wait_ready(api, namespaces, timeout_s, poll_s)` reads, every `poll_s` seconds and for at most
  `timeout_s` seconds (monotonic clock), every Deployment, StatefulSet and Job of the namespace(s)
  (one name or several). It returns the workloads it waited for (`Ready`) once each is ready:
  - a Deployment as `kubectl rollout status` judges one: its status has observed its generation,
    and `updatedReplicas`, `readyReplicas` and `availableReplicas` reach `spec.replicas` with no old
    replica left (`replicas` = `updatedReplicas`);
  - a StatefulSet: observed generation, `readyReplicas` and `updatedReplicas` at `spec.replicas`,
    and `currentRevision` = `updateRevision` when the status names both;
  - a Job: complete (`succeeded` at its completions, or a `Complete` condition), unless it is
    suspended: a suspended Job (the chart's grader, which the runner resumes at the end) is not
    waited for, as an install does not wait for a Job that cannot run.
  A Job whose `Failed` condition is true raises `WorkloadFailed` at once (it will not complete).
  Past the bound, `InstallTimeout` names every workload not ready, why (its status), and what its
  pods wait on (each container's waiting reason and message, a pod's unmet condition), or that
  the pods could not be read. Every request carries a timeout within the bound, so a server that
  does not answer cannot hold the wait past it (by more than one request's connect time).
- `restart_workload(api, namespace, name, timeout_s, poll_s)` is the restart challenge on a
  cluster, as `kubectl rollout restart` does it: a PATCH of the workload's pod template annotation
  `kubectl.kubernetes.io/restartedAt` (now, RFC 3339) with the caller's credentials (the runner's,
  never the agent's), then a bounded wait until the rollout the patch started is done: its
  generation (the PATCH's answer) observed and the workload ready as above. A Deployment is tried
  first, then a StatefulSet of that name; neither is `KubeError`. With `kind`, only that kind is
  patched (the harness pod's Role lets it patch only the restart's workloads, each of its kind).
  Past the bound, `RestartTimeout` (an `InstallTimeout`: same fields) says why.
- Every refusal or API failure is a `KubeError`; the runner turns each into the trial's infra_error.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from arenac.runner.kube.api import KubeError, describe, k8s, status_of

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # the annotation kubectl's rollout restart sets
REQUEST_TIMEOUT_S = 30.0  # one request's bound; a wait's own bound cuts it shorter
WorkloadKind = Literal["Deployment", "StatefulSet", "Job"]


@dataclass(frozen=True)
class NotReady:
    kind: WorkloadKind
    namespace: str
    name: str
    why: str  # its status, then what its pods wait on

    def line(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}: {self.why}"


@dataclass(frozen=True)
class Ready:
    workloads: tuple[str, ...]  # "Kind namespace/name", each ready when the wait ended
    skipped: tuple[str, ...]  # the suspended Jobs, not waited for
    waited_s: float


@dataclass(frozen=True)
class Restarted:
    kind: Literal["Deployment", "StatefulSet"]
    namespace: str
    name: str
    restarted_at: str  # the annotation's value
    generation: int  # the generation whose rollout was waited for
    waited_s: float


class WorkloadsNotReady(KubeError):
    """Workloads that are not ready, each with why."""

    def __init__(self, message: str, not_ready: tuple[NotReady, ...]) -> None:
        super().__init__(message)
        self.not_ready = not_ready


class InstallTimeout(WorkloadsNotReady):
    """The bounded wait for readiness ended with workloads not ready."""


class RestartTimeout(InstallTimeout):
    """The bounded wait for a restarted workload's new rollout ended before it was ready."""


class WorkloadFailed(WorkloadsNotReady):
    """A Job failed: waiting longer cannot make it complete."""


@dataclass(frozen=True)
class _Workload:
    kind: WorkloadKind
    namespace: str
    name: str
    body: Any  # the client's model (V1Deployment, V1StatefulSet, V1Job)

    @property
    def key(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class _Clock:
    """A deadline, and the timeout each request gets so that none outlives it by much."""

    def __init__(self, timeout_s: float) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + timeout_s

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def request_timeout(self) -> float:
        # at least a second: a request given no time at all would fail for the wrong reason
        return max(1.0, min(REQUEST_TIMEOUT_S, self.left()))

    def waited(self) -> float:
        return round(time.monotonic() - self.start, 3)


def wait_ready(api: ApiClient, namespaces: str | Sequence[str], timeout_s: float = 300.0,
               poll_s: float = 1.0) -> Ready:
    names = (namespaces,) if isinstance(namespaces, str) else tuple(namespaces)
    clock = _Clock(timeout_s)
    while True:
        workloads = [w for namespace in names for w in _workloads(api, namespace, clock)]
        skipped = tuple(w.key for w in workloads if w.kind == "Job" and _suspended(w.body))
        waited = [w for w in workloads if w.key not in skipped]
        pending = [(w, why) for w in waited if (why := _why_not_ready(w)) is not None]
        failed = [(w, why) for w, why in pending if w.kind == "Job" and _job_failed(w.body)]
        if failed:
            details = _explain(api, failed, clock)
            raise WorkloadFailed("failed: " + "; ".join(d.line() for d in details), details)
        if not pending:
            return Ready(tuple(w.key for w in waited), skipped, clock.waited())
        if clock.left() <= 0:
            details = _explain(api, pending, clock)
            raise InstallTimeout(f"not ready within {timeout_s:g} s: " + "; ".join(d.line() for d in details),
                                 details)
        time.sleep(min(poll_s, clock.left()))


def restart_workload(api: ApiClient, namespace: str, name: str, timeout_s: float = 300.0,
                     poll_s: float = 1.0, kind: Literal["Deployment", "StatefulSet"] | None = None) -> Restarted:
    clock = _Clock(timeout_s)
    apps = k8s().AppsV1Api(api)
    restarted_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: restarted_at}}}}}
    kinds: tuple[tuple[Literal["Deployment", "StatefulSet"], Any], ...] = (
        ("Deployment", apps.patch_namespaced_deployment), ("StatefulSet", apps.patch_namespaced_stateful_set))
    # a caller that knows the kind patches only that one: a credential allowed to patch exactly
    # the restart's workloads by name (the harness pod's Role) would be refused the other kind's probe
    patched_kind: Literal["Deployment", "StatefulSet"] | None = None
    for candidate, send in [k for k in kinds if kind is None or k[0] == kind]:
        try:
            patched = send(name, namespace, patch, _request_timeout=clock.request_timeout())
            patched_kind = candidate
            break
        except Exception as error:
            if status_of(error) != 404:
                raise KubeError(f"cannot restart {candidate} {namespace}/{name}: {describe(error)}") from error
    if patched_kind is None:
        what = f"no {kind} of that name" if kind is not None else "no Deployment or StatefulSet of that name"
        raise KubeError(f"cannot restart {namespace}/{name}: {what}")
    kind = patched_kind
    generation = int(patched.metadata.generation or 0)
    read = apps.read_namespaced_deployment if kind == "Deployment" else apps.read_namespaced_stateful_set
    while True:
        try:
            body = read(name, namespace, _request_timeout=clock.request_timeout())
        except Exception as error:
            raise KubeError(f"cannot read {kind} {namespace}/{name}: {describe(error)}") from error
        workload = _Workload(kind, namespace, name, body)
        # the rollout the patch began: its generation observed, not an earlier one's readiness
        observed = int((body.status and body.status.observed_generation) or 0)
        why = (f"the rollout of generation {generation} is not yet observed (status at {observed})"
               if observed < generation else _why_not_ready(workload))
        if why is None:
            return Restarted(kind, namespace, name, restarted_at, generation, clock.waited())
        if clock.left() <= 0:
            details = _explain(api, [(workload, why)], clock)
            raise RestartTimeout(f"restarted, not ready again {timeout_s:g} s later: "
                                 + "; ".join(d.line() for d in details), details)
        time.sleep(min(poll_s, clock.left()))


def _workloads(api: ApiClient, namespace: str, clock: _Clock) -> list[_Workload]:
    apps, batch = k8s().AppsV1Api(api), k8s().BatchV1Api(api)
    lists: tuple[tuple[WorkloadKind, Any], ...] = (
        ("Deployment", apps.list_namespaced_deployment), ("StatefulSet", apps.list_namespaced_stateful_set),
        ("Job", batch.list_namespaced_job))
    found: list[_Workload] = []
    for kind, list_them in lists:
        try:
            items = list_them(namespace, _request_timeout=clock.request_timeout()).items
        except Exception as error:
            raise KubeError(f"cannot list the {kind}s of {namespace}: {describe(error)}") from error
        found += [_Workload(kind, namespace, item.metadata.name, item) for item in items]
    return sorted(found, key=lambda w: (w.namespace, w.kind, w.name))


def _suspended(job: Any) -> bool:
    return bool(job.spec is not None and job.spec.suspend)


def _job_failed(job: Any) -> bool:
    conditions = (job.status and job.status.conditions) or []
    return any(c.type == "Failed" and c.status == "True" for c in conditions)


def _why_not_ready(workload: _Workload) -> str | None:
    """None when ready; else what its status says is missing."""
    body = workload.body
    status = body.status
    if workload.kind == "Job":
        conditions = (status and status.conditions) or []
        if any(c.type == "Complete" and c.status == "True" for c in conditions):
            return None
        completions = (body.spec and body.spec.completions) or 1
        succeeded = (status and status.succeeded) or 0
        if succeeded >= completions:
            return None
        failed = next((c for c in conditions if c.type == "Failed" and c.status == "True"), None)
        if failed is not None:
            return f"failed ({failed.reason or 'no reason'}{': ' + failed.message if failed.message else ''})"
        return f"{succeeded} of {completions} completions, {(status and status.active) or 0} active"
    wanted = body.spec.replicas if body.spec is not None and body.spec.replicas is not None else 1
    if status is None:
        return "no status yet (not seen by its controller)"
    generation = body.metadata.generation or 0
    if (status.observed_generation or 0) < generation:
        return f"generation {generation} not yet observed (status at {status.observed_generation or 0})"
    updated, ready = status.updated_replicas or 0, status.ready_replicas or 0
    if updated < wanted:
        return f"{updated} of {wanted} replicas updated"
    if ready < wanted:
        return f"{ready} of {wanted} replicas ready"
    if workload.kind == "Deployment":
        if (status.replicas or 0) > updated:
            return f"{(status.replicas or 0) - updated} old replicas pending termination"
        if (status.available_replicas or 0) < wanted:
            return f"{status.available_replicas or 0} of {wanted} replicas available"
    elif status.current_revision and status.update_revision and status.current_revision != status.update_revision:
        return f"revision {status.update_revision} not yet current ({status.current_revision})"
    return None


def _explain(api: ApiClient, pending: Sequence[tuple[_Workload, str]], clock: _Clock) -> tuple[NotReady, ...]:
    """Each workload's status reason, and what its pods wait on."""
    pods: dict[str, list[Any] | str] = {}
    for namespace in sorted({w.namespace for w, _ in pending}):
        try:
            pods[namespace] = list(k8s().CoreV1Api(api).list_namespaced_pod(
                namespace, _request_timeout=clock.request_timeout()).items)
        except Exception as error:  # the reasons are a courtesy: the timeout is what the caller needs
            pods[namespace] = f"its pods could not be read ({describe(error)})"
    explained = []
    for workload, why in pending:
        found = pods[workload.namespace]
        said = found if isinstance(found, str) else _pods_say(workload, found)
        explained.append(NotReady(workload.kind, workload.namespace, workload.name, f"{why}; {said}"))
    return tuple(explained)


def _selector(workload: _Workload) -> dict[str, str]:
    spec = workload.body.spec
    selector = spec.selector.match_labels if spec is not None and spec.selector is not None else None
    if selector:
        return dict(selector)
    template = spec.template if spec is not None else None  # a Job's selector is the server's own
    return dict((template and template.metadata and template.metadata.labels) or {})


def _pods_say(workload: _Workload, pods: Sequence[Any]) -> str:
    # the label selector is matched here, not by the server: the fake API evaluates none, and the
    # check costs nothing on a cluster
    selector = _selector(workload)
    mine = [p for p in pods if selector and selector.items() <= dict(p.metadata.labels or {}).items()]
    if not mine:
        return "no pods"
    return "; ".join(_pod_says(pod) for pod in sorted(mine, key=lambda p: p.metadata.name))


def _pod_says(pod: Any) -> str:
    status = pod.status
    phase = (status and status.phase) or "no phase"
    waits = []
    for container in (status and status.container_statuses) or []:
        state = container.state
        if state is not None and state.waiting is not None:
            message = f": {state.waiting.message}" if state.waiting.message else ""
            waits.append(f"{container.name} waiting ({state.waiting.reason or 'no reason'}{message})")
        elif state is not None and state.terminated is not None:
            waits.append(f"{container.name} terminated ({state.terminated.reason or 'no reason'}, "
                         f"exit {state.terminated.exit_code})")
        elif not container.ready:
            waits.append(f"{container.name} running, not ready")
    if not waits:
        unmet = [c for c in (status and status.conditions) or [] if c.status != "True"]
        waits = [f"{c.type} {c.reason or 'false'}{': ' + c.message if c.message else ''}" for c in unmet]
    return f"pod {pod.metadata.name} {phase}" + (f" ({', '.join(waits)})" if waits else "")
