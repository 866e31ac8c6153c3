"""The substrate's pods as the harness pod sees them through the API: which workload each belongs
to, whether it is ready, and the watch of the parts (runner/watch.py's `LossWatch`) on a cluster.

Contract:

- `app_pods(api, namespace, substrate, timeout_s)` lists the pods of `namespace` (one `list pods`,
  the only pod call the harness's Role grants) and returns, sorted by name, a `PodView` for each
  pod a workload of the substrate owns: its controller owner a ReplicaSet `<workload>-<hash>`
  (a Deployment's: the ReplicaSet's name is the Deployment's and its pod-template hash) or a
  StatefulSet `<workload>`, the workload one of `parts(substrate)` (`<substrate>-<component>`).
  Any other pod (a Job's, a bare pod) is not the substrate's. An API failure raises `KubeError`.
- `PodWatch(api, namespace, substrate, loadgen, clock, on_loss)` looks, every `INTERVAL_S` real
  seconds, at those pods and at the load generator's process (in this pod, as the local backend's:
  `LossWatch._look_at_process`). It remembers every pod it saw; a pod seen before that is gone or
  terminating (a deletion, an eviction, a rollout's replacement) or whose containers' restart count
  rose (a crash, an OOM kill) is an event of its component, recorded once per pod and count (a
  pod already terminating when first seen is none: an earlier rollout's, going before the watch
  saw it run):
  - inside `restarting(component)` (the restart challenge, on purpose): ignored, and so are the
    pods that ran before it when they go later (a rollout ends when the new pod is ready, not when
    the old one is gone);
  - inside the agent's window (`open_window()` at the handover to `close_window()` at the freeze):
    the agent's restart, counted for `agent_restarts()` (component -> count, every component; the
    snapshots' `never restarted`), not a loss: the agent holds a real kubectl there, whose calls
    the harness does not see;
  - otherwise a `PartLoss` of kind substrate. `blame` is `LossWatch.blame` with the agent's
    restarts counted as calls that could change the substrate: a loss before the handover is the
    infrastructure's; after it, the agent's only if it had replaced a pod or made a changing
    brokered call before.
  Pods that appear are only remembered: a replacement shows as the old pod going.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from arenac.runner.kube.api import KubeError, describe, k8s
from arenac.runner.watch import LossWatch, PartLoss

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from arenac.substrate.interface import SubstrateDriver

INTERVAL_S = 1.0  # a list of pods a second: cheap for the API server, and a replacement takes seconds
DATASTORES = ("postgres", "redis")  # beside the services: one database and one Redis (substrate/interface.py)
WorkloadKind = Literal["Deployment", "StatefulSet"]


@dataclass(frozen=True)
class PodView:
    """One substrate pod, as a look of the watch needs it."""

    name: str
    uid: str
    component: str  # "message", "postgres"
    workload: str  # "spine-message"
    kind: WorkloadKind
    ready: bool  # its Ready condition true, and not terminating
    terminating: bool  # a deletion timestamp: it is going
    restarts: int  # its containers' restart counts, summed
    why_not_ready: str  # "" when ready: its phase and what its containers wait on

    def line(self) -> str:
        return f"pod {self.name} ({self.why_not_ready})" if self.why_not_ready else f"pod {self.name} ready"


def parts(substrate: SubstrateDriver) -> tuple[str, ...]:
    """The substrate's components, each one workload `<substrate>-<component>`."""
    return (*substrate.services, *DATASTORES)


def workload_name(substrate: SubstrateDriver, component: str) -> str:
    return f"{substrate.name}-{component}"


def app_pods(api: ApiClient, namespace: str, substrate: SubstrateDriver, timeout_s: float = 30.0) -> list[PodView]:
    try:
        items = k8s().CoreV1Api(api).list_namespaced_pod(namespace, _request_timeout=timeout_s).items
    except Exception as error:
        raise KubeError(f"cannot list the pods of {namespace}: {describe(error)}") from error
    by_workload = {workload_name(substrate, c): c for c in parts(substrate)}
    views = [view for pod in items if (view := _view(pod, by_workload)) is not None]
    return sorted(views, key=lambda v: v.name)


def _owner(pod: Any, by_workload: dict[str, str]) -> tuple[str, WorkloadKind] | None:
    for owner in pod.metadata.owner_references or []:
        if owner.controller is False:
            continue
        if owner.kind == "StatefulSet" and owner.name in by_workload:
            return owner.name, "StatefulSet"
        if owner.kind == "ReplicaSet":
            deployment = owner.name.rsplit("-", 1)[0]  # the ReplicaSet is `<deployment>-<pod-template-hash>`
            if deployment in by_workload:
                return deployment, "Deployment"
    return None


def _view(pod: Any, by_workload: dict[str, str]) -> PodView | None:
    owner = _owner(pod, by_workload)
    if owner is None:
        return None
    workload, kind = owner
    status = pod.status
    terminating = pod.metadata.deletion_timestamp is not None
    conditions = (status and status.conditions) or []
    ready = not terminating and any(c.type == "Ready" and c.status == "True" for c in conditions)
    containers = (status and status.container_statuses) or []
    restarts = sum(int(c.restart_count or 0) for c in containers)
    why = ""
    if not ready:
        waits = [f"{c.name} waiting ({c.state.waiting.reason or 'no reason'})" for c in containers
                 if c.state is not None and c.state.waiting is not None]
        phase = (status and status.phase) or "no phase"
        why = "terminating" if terminating else ", ".join([phase, *waits] if waits else [phase, "not ready"])
    return PodView(pod.metadata.name, str(pod.metadata.uid or pod.metadata.name), by_workload[workload], workload,
                   kind, ready, terminating, restarts, why)


class PodWatch(LossWatch):
    """The cluster backend's watch of the parts (see the module's docstring)."""

    interval_s = INTERVAL_S

    def __init__(self, api: ApiClient, namespace: str, substrate: SubstrateDriver, loadgen: Any, clock: Any,
                 on_loss: Callable[[], None] | None = None) -> None:
        super().__init__(clock, on_loss)
        self.api, self.namespace, self.substrate, self.loadgen = api, namespace, substrate, loadgen
        self._pods: dict[str, PodView] = {}  # uid -> the pod as last seen
        self._counted: set[tuple[str, int]] = set()  # (uid, restarts) already an event; (uid, -1): gone
        self._restarting: set[str] = set()
        self._expected_gone: set[str] = set()  # uids replaced on purpose (the restart challenge)
        self._window = False
        self._agent: dict[str, int] = dict.fromkeys(parts(substrate), 0)
        self._agent_times: list[float] = []
        self._state = threading.Lock()  # the window and the restarts, set by the episode's threads

    def start(self) -> PodWatch:
        self.check()  # the pods as they are now are the baseline, and an API that refuses says so at once
        super().start()
        return self

    @property
    def in_agent_window(self) -> bool:
        with self._state:
            return self._window

    # ---- what the backend tells the watch ---------------------------------------------------
    def open_window(self) -> None:
        with self._state:
            self._window = True

    def close_window(self) -> None:
        with self._state:
            self._window = False

    @contextmanager
    def restarting(self, component: str) -> Iterator[None]:
        """The harness replaces `component`'s pods on purpose meanwhile (and those it had, later)."""
        with self._lock, self._state:
            self._restarting.add(component)
            self._expected_gone |= {uid for uid, pod in self._pods.items() if pod.component == component}
        try:
            yield
        finally:
            with self._lock:
                try:  # the pods as they are now are the new baseline: one look, its events ignored
                    self._look(strict=False)
                except KubeError:
                    pass  # the pods that ran before the restart are expected to go already
                with self._state:
                    self._restarting.discard(component)

    def agent_restarts(self) -> dict[str, int]:
        with self._state:
            return dict(sorted(self._agent.items()))

    def blame(self, handover_s: float | None, agent_calls: Iterable[float]) -> str | None:
        with self._state:
            replaced = list(self._agent_times)
        return super().blame(handover_s, [*agent_calls, *replaced])

    # ---- one look ---------------------------------------------------------------------------
    def _look(self, strict: bool) -> None:
        if self.loadgen is not None:
            self._look_at_process("loadgen", "harness", self.loadgen.process, strict)
        current = {pod.uid: pod for pod in app_pods(self.api, self.namespace, self.substrate)}
        for uid, before in sorted(self._pods.items(), key=lambda item: item[1].name):
            now = current.get(uid)
            if before.terminating:  # already going when seen (a rollout before the watch): not an event now
                continue
            if now is None or now.terminating:
                self._event(before, (uid, -1), f"pod {before.name} {'terminating' if now else 'gone'}")
            elif now.restarts > before.restarts:
                self._event(now, (uid, now.restarts),
                            f"pod {now.name} restarted its containers ({now.restarts - before.restarts} more)")
        # a pod gone stays remembered as last seen, so that it is counted once
        self._pods.update(current)

    def _event(self, pod: PodView, key: tuple[str, int], how: str) -> None:
        if key in self._counted:
            return
        self._counted.add(key)
        with self._state:
            on_purpose = pod.component in self._restarting or (key[1] == -1 and pod.uid in self._expected_gone)
            in_window = self._window
        if on_purpose:
            return
        t = round(self.clock.now(), 3)
        if in_window:
            with self._state:
                self._agent[pod.component] = self._agent.get(pod.component, 0) + 1
                self._agent_times.append(t)
            return
        self._lost((pod.component, key), PartLoss(pod.component, "substrate", t, how))


def not_ready_lines(pods: Sequence[PodView], substrate: SubstrateDriver) -> list[str]:
    """Why the substrate's pods are not all ready: a component with no pod, or none of its pods ready."""
    lines = []
    for component in parts(substrate):
        mine = [p for p in pods if p.component == component]
        if not mine:
            lines.append(f"no pod of {workload_name(substrate, component)}")
        elif not any(p.ready for p in mine):
            lines.append("; ".join(p.line() for p in mine))
    return lines
