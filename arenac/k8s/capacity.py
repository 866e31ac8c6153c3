"""Capacity of a cluster for arenac trials: what one trial requests, how long it lasts, how many
trials a node holds and how long a campaign of T trials takes on N nodes (docs/kubernetes.md,
"Capacity"). Offline: the chart is rendered with Helm (`helm.render_chart`), nothing is installed.

Contract:

- `parse_quantity(text)` reads a Kubernetes resource quantity (`100m`, `0.5`, `256Mi`, `1G`,
  `1e3`) as an exact `Fraction`; anything else raises `CapacityError`.
- `pod_requests(pod_spec)` is one pod's requests as the scheduler counts them: per resource, the
  larger of (every app container plus every sidecar: an init container with `restartPolicy:
  Always`) and (each regular init container plus the sidecars started before it), plus the pod's
  `overhead`; a container that gives a limit and no request requests its limit (the API server's
  defaulting). CPU is counted in whole millicores (rounded up), memory and ephemeral storage in
  bytes, and every pod takes one of the node's pod slots.
- `trial_requests(objects, application_namespace, harness_namespace)` sums the pods of every
  pod-creating object of one trial's rendered chart: Deployments, ReplicaSets, ReplicationControllers
  and StatefulSets times their replicas (default 1), Jobs and CronJobs times min(parallelism,
  completions) (a suspended Job is counted: it runs within the trial), bare Pods once; a DaemonSet
  (per node, not per trial) or an object in a third namespace raises `CapacityError`. Pods
  labelled `arenac.dev/role: agent` (what the chart's agent NetworkPolicy selects) are the agent's,
  whatever their namespace. PersistentVolumeClaims (bare, and a StatefulSet's claim templates times
  its replicas) are summed apart: they are volumes, not node resources. `surge` is the largest pod a
  rolling restart in the application's namespace adds beside the old one (a Deployment with the
  RollingUpdate strategy and maxSurge above 0): the headroom a restart challenge, or the agent's own
  `kubectl rollout restart`, needs for a moment. The harness's Deployments are not restarted in a trial.
- `bundle_requests(bundle_dir)` renders the bundle's chart with its own values into
  `application_namespace` and reads the harness namespace from the chart (`harness.namespace`).
- `TrialPhases.from_plan(plan)` is the plan's timeline as the episode runs it (runner/episode.py);
  `TrialTiming` adds what the plan does not hold (the time scale, provisioning, teardown and
  grading, how much of its window an agent uses, how soon a fault shows). `duration_bound` is a
  trial's real seconds with every phase at its bound; `sample_duration` draws one from a seeded
  `random.Random`, never above the bound.
- The analytic model: `trials_per_node` = min over the node's resources of floor(allocatable /
  per-trial request); `campaign_wall_s` = ceil(T / concurrency) waves of the longest trial, where
  concurrency = min(jobs, slots); `makespan_lower_bound` and `list_schedule_upper_bound` bracket any
  schedule (the bound) and a greedy one (Graham's) of trials of varying durations.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

from arenac.model.plan import Plan

__all__ = [
    "AgentWindowUse", "CapacityError", "NodeShape", "PodRequests", "Resources", "TrialPhases", "TrialRequests",
    "TrialTiming", "bundle_requests", "campaign_wall_s", "duration_bound", "list_schedule_upper_bound",
    "makespan_lower_bound", "parse_quantity", "pod_requests", "sample_duration", "trial_requests",
    "trials_per_node",
]

MI = 1024 ** 2
GI = 1024 ** 3
AGENT_LABEL = ("arenac.dev/role", "agent")
# the episode's constants the timeline depends on (runner/episode.py RESTART_SETTLE_S; runner/onsets.py
# HUNG_REQUEST_VISIBLE_S, the load generator's client timeout plus a second): real seconds, kept
# here so that this module imports nothing of the harness; tests/k8s/test_capacity.py pins them equal
RESTART_SETTLE_S = 2.0
HUNG_REQUEST_VISIBLE_S = 11.0

_SUFFIXES = {
    "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9), "T": Fraction(10 ** 12),
    "P": Fraction(10 ** 15), "E": Fraction(10 ** 18),
    "Ki": Fraction(2 ** 10), "Mi": Fraction(2 ** 20), "Gi": Fraction(2 ** 30), "Ti": Fraction(2 ** 40),
    "Pi": Fraction(2 ** 50), "Ei": Fraction(2 ** 60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_POD_WORKLOADS = frozenset({"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"})


class CapacityError(Exception):
    """A chart or a quantity the capacity model cannot count."""


def parse_quantity(text: str | int | float) -> Fraction:
    """A Kubernetes resource quantity, exactly (`100m` is 1/10, `1Ki` is 1024)."""
    if isinstance(text, bool):
        raise CapacityError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise CapacityError(f"not a quantity: {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return value * Fraction(10) ** int(exponent[1:])
    return value * _SUFFIXES[suffix or ""]


@dataclass(frozen=True)
class Resources:
    """What the scheduler counts on a node: millicores, bytes of memory and of ephemeral storage,
    pod slots."""

    cpu_m: int = 0
    memory_b: int = 0
    ephemeral_b: int = 0
    pods: int = 0

    # spelt out field by field: the simulation (bench/capacity.py) calls these millions of times
    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu_m + other.cpu_m, self.memory_b + other.memory_b,
                         self.ephemeral_b + other.ephemeral_b, self.pods + other.pods)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu_m - other.cpu_m, self.memory_b - other.memory_b,
                         self.ephemeral_b - other.ephemeral_b, self.pods - other.pods)

    def times(self, count: int) -> Resources:
        return Resources(self.cpu_m * count, self.memory_b * count, self.ephemeral_b * count, self.pods * count)

    def most(self, other: Resources) -> Resources:
        """Per resource, the larger of the two."""
        return Resources(max(self.cpu_m, other.cpu_m), max(self.memory_b, other.memory_b),
                         max(self.ephemeral_b, other.ephemeral_b), max(self.pods, other.pods))

    def fits_in(self, room: Resources) -> bool:
        return (self.cpu_m <= room.cpu_m and self.memory_b <= room.memory_b and self.ephemeral_b <= room.ephemeral_b
                and self.pods <= room.pods)

    def items(self) -> list[tuple[str, int]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]

    def describe(self) -> str:
        """`750m cpu, 1152Mi memory, 10 pods` (ephemeral storage only when requested)."""
        parts = [f"{self.cpu_m}m cpu", f"{_mebibytes(self.memory_b)} memory"]
        if self.ephemeral_b:
            parts.append(f"{_mebibytes(self.ephemeral_b)} ephemeral")
        parts.append(f"{self.pods} pod{'s' if self.pods != 1 else ''}")
        return ", ".join(parts)


def _mebibytes(count: int) -> str:
    return f"{count // MI}Mi" if count % MI == 0 else f"{count}B"


def _ceil(value: Fraction) -> int:
    return math.ceil(value)


def _container_requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = {**limits, **(resources.get("requests") or {})}  # a limit without a request is the request
    return _resource_map(requests)


def _resource_map(values: Mapping[str, Any]) -> Resources:
    cpu = parse_quantity(values["cpu"]) if "cpu" in values else Fraction(0)
    memory = parse_quantity(values["memory"]) if "memory" in values else Fraction(0)
    ephemeral = parse_quantity(values["ephemeral-storage"]) if "ephemeral-storage" in values else Fraction(0)
    return Resources(cpu_m=_ceil(cpu * 1000), memory_b=_ceil(memory), ephemeral_b=_ceil(ephemeral))


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """One pod's effective requests (the init-container rule, sidecars, overhead), one pod slot."""
    apps = Resources()
    for container in spec.get("containers") or ():
        apps = apps + _container_requests(container)
    sidecars = Resources()
    init_peak = Resources()
    for container in spec.get("initContainers") or ():
        own = _container_requests(container)
        if container.get("restartPolicy") == "Always":  # a sidecar: runs on beside what follows it
            sidecars = sidecars + own
            init_peak = init_peak.most(sidecars)
        else:
            init_peak = init_peak.most(own + sidecars)
    effective = (apps + sidecars).most(init_peak) + _resource_map(spec.get("overhead") or {})
    return effective + Resources(pods=1)


@dataclass(frozen=True)
class PodRequests:
    """The pods of one pod-creating object: its kind and name, how many pods at once, and each
    pod's requests."""

    kind: str
    name: str
    namespace: str
    replicas: int
    each: Resources

    @property
    def total(self) -> Resources:
        return self.each.times(self.replicas)


@dataclass(frozen=True)
class TrialRequests:
    """One trial's requests per namespace, its agent's pods, its volumes and the surge headroom."""

    application: tuple[PodRequests, ...]
    harness: tuple[PodRequests, ...]
    agent: tuple[PodRequests, ...] = ()
    volume_claims: int = 0
    volume_storage_b: int = 0
    surge: Resources = field(default_factory=Resources)

    @staticmethod
    def _sum(workloads: Iterable[PodRequests]) -> Resources:
        total = Resources()
        for workload in workloads:
            total = total + workload.total
        return total

    @property
    def application_total(self) -> Resources:
        return self._sum(self.application)

    @property
    def harness_total(self) -> Resources:
        return self._sum(self.harness)

    @property
    def agent_total(self) -> Resources:
        return self._sum(self.agent)

    @property
    def total(self) -> Resources:
        """Every pod of the trial at once (a conservative peak: the Jobs are counted beside the rest)."""
        return self.application_total + self.harness_total + self.agent_total

    @property
    def peak(self) -> Resources:
        """The total plus one rolling restart's extra pod: what a node must hold for the trial."""
        return self.total + self.surge

    def pods(self, with_surge: bool = True) -> list[Resources]:
        """Every pod the scheduler places for this trial, in the chart's order (with the surge pod last)."""
        placed = [w.each for w in (*self.application, *self.harness, *self.agent) for _ in range(w.replicas)]
        if with_surge and self.surge.pods:
            placed.append(self.surge)
        return placed


def _replicas(kind: str, spec: Mapping[str, Any]) -> int:
    if kind in _POD_WORKLOADS:
        replicas = spec.get("replicas", 1)
        return 1 if replicas is None else int(replicas)
    # Job: pods at once is its parallelism (default 1), never more than its completions
    parallelism = spec.get("parallelism")
    running = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return running if completions is None else min(running, int(completions))


def _surge_pods(spec: Mapping[str, Any], replicas: int) -> int:
    """How many pods a rolling update of a Deployment adds beside the old ones (maxSurge, default 25%,
    a percentage rounded up, as the Deployment controller does)."""
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or replicas == 0:
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas * Fraction(surge[:-1]) / 100)
    return int(surge)


def _pod_template(kind: str, body: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the controller's spec, its pod template) of a pod-creating object."""
    spec = body.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return spec, spec.get("template") or {}


def trial_requests(objects: Sequence[Mapping[str, Any]], application_namespace: str,
                   harness_namespace: str) -> TrialRequests:
    """Sum the requests of one trial's rendered objects, per namespace (see the module's contract)."""
    groups: dict[str, list[PodRequests]] = {"application": [], "harness": [], "agent": []}
    claims = storage = 0
    surge = Resources()
    for body in objects:
        kind = body["kind"]
        metadata = body.get("metadata") or {}
        namespace = metadata.get("namespace") or application_namespace
        if namespace not in (application_namespace, harness_namespace):
            raise CapacityError(f"{kind}/{metadata.get('name')} is in namespace {namespace!r}, neither the "
                                f"application's ({application_namespace}) nor the harness's ({harness_namespace})")
        if kind == "DaemonSet":
            raise CapacityError(f"DaemonSet/{metadata.get('name')} runs on every node, not once per trial")
        if kind == "PersistentVolumeClaim":
            claims += 1
            storage += _claim_storage(body)
            continue
        if kind == "Pod":
            spec, template = body, body
            replicas = 1
        elif kind in _POD_WORKLOADS or kind in ("Job", "CronJob"):
            spec, template = _pod_template(kind, body)
            replicas = _replicas(kind, spec)
        else:
            continue
        pod_spec = template.get("spec") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        each = pod_requests(pod_spec)
        workload = PodRequests(kind, metadata["name"], namespace, replicas, each)
        if labels.get(AGENT_LABEL[0]) == AGENT_LABEL[1]:
            groups["agent"].append(workload)
        else:
            groups["application" if namespace == application_namespace else "harness"].append(workload)
        if kind == "Deployment" and namespace == application_namespace and _surge_pods(spec, replicas):
            surge = surge.most(each)
        if kind == "StatefulSet":
            for template_claim in spec.get("volumeClaimTemplates") or ():
                claims += replicas
                storage += replicas * _claim_storage(template_claim)
    return TrialRequests(application=tuple(groups["application"]), harness=tuple(groups["harness"]),
                         agent=tuple(groups["agent"]), volume_claims=claims, volume_storage_b=storage, surge=surge)


def _claim_storage(claim: Mapping[str, Any]) -> int:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return _ceil(parse_quantity(requests["storage"])) if "storage" in requests else 0


def bundle_requests(bundle: Path, application_namespace: str = "arenac-trial") -> TrialRequests:
    """Render a bundle's chart with its own values (helm-python-sdk) and sum its trial's requests."""
    import yaml

    from arenac.k8s.helm import render_chart

    values = yaml.safe_load((bundle / "chart" / "values.yaml").read_text(encoding="utf-8")) or {}
    harness_namespace = str((values.get("harness") or {}).get("namespace") or application_namespace)
    objects = render_chart(bundle / "chart", namespace=application_namespace)
    return trial_requests(objects, application_namespace, harness_namespace)


# ---- how long a trial lasts -----------------------------------------------------------------------

@dataclass(frozen=True)
class TrialPhases:
    """A plan's timeline as the episode runs it, in plan seconds (runner/episode.py): the warm-up,
    the latest onset and the manifestation bound of the faults awaited before the handover, the agent's
    window, the load cycle (the soak starts at the next cycle boundary after the freeze), the soak, and
    the challenges (a restart settles for RESTART_SETTLE_S real seconds, then one cycle is observed from
    the next cycle boundary; a retrigger is observed for one cycle)."""

    warmup_s: float
    onset_s: float
    manifest_within_s: float
    agent_window_s: float
    cycle_s: float
    soak_s: float
    restart: bool
    retrigger: bool

    @classmethod
    def from_plan(cls, plan: Plan) -> TrialPhases:
        awaited = [f for f in plan.faults if not f.decoy and f.onset.kind != "in_window"]
        # the handover waits for every awaited fault: the latest (onset + bound) decides; its onset is
        # kept apart because the manifestation's real-time floor applies to the bound only
        latest = max(awaited, key=lambda f: (f.onset.latest_start_s + f.manifest_within_s, f.name), default=None)
        timeline = plan.timeline
        return cls(warmup_s=timeline.warmup_s, onset_s=latest.onset.latest_start_s if latest else 0.0,
                   manifest_within_s=latest.manifest_within_s if latest else 0.0,
                   agent_window_s=timeline.agent_window_s, cycle_s=timeline.cycle_s, soak_s=timeline.soak_s,
                   restart=bool(plan.challenges.restart), retrigger=bool(plan.challenges.retrigger))


@dataclass(frozen=True)
class AgentWindowUse:
    """How much of its window an agent uses: with probability `full_share` all of it (it never declares,
    or declares at the end), else a share drawn uniformly from [low, high]."""

    full_share: float = 0.3
    low: float = 0.1
    high: float = 1.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.full_share <= 1.0 and 0.0 <= self.low <= self.high <= 1.0):
            raise ValueError(f"agent window use: need 0 <= full_share <= 1 and 0 <= low <= high <= 1: {self}")

    def draw(self, rng: random.Random) -> float:
        return 1.0 if rng.random() < self.full_share else rng.uniform(self.low, self.high)


SCRIPTED_AGENTS = AgentWindowUse(full_share=0.0, low=0.0, high=0.02)  # oracle, noop, adversaries: seconds


@dataclass(frozen=True)
class TrialTiming:
    """What a trial's wall time depends on beyond its plan: the time scale (multiplies every plan
    duration), provisioning (namespaces, Helm install, readiness; real seconds, not in the plan),
    teardown with grading (real seconds), the agents' use of their window, and the share of its bound
    after which a fault shows (drawn uniformly from [0, manifest_share_high])."""

    time_scale: float = 1.0
    provision_s: float = 60.0
    teardown_s: float = 45.0
    agent: AgentWindowUse = field(default_factory=AgentWindowUse)
    manifest_share_high: float = 1.0

    def __post_init__(self) -> None:
        if self.time_scale <= 0 or self.provision_s < 0 or self.teardown_s < 0:
            raise ValueError(f"trial timing: a positive time scale and non-negative overheads: {self}")
        if not 0.0 <= self.manifest_share_high <= 1.0:
            raise ValueError(f"trial timing: manifest_share_high in [0, 1]: {self.manifest_share_high}")


def _real_s(phases: TrialPhases, timing: TrialTiming, manifest_share: float, window_share: float,
            full_cycle_wait: bool) -> float:
    scale = timing.time_scale
    manifest_bound = max(phases.manifest_within_s * scale, HUNG_REQUEST_VISIBLE_S) if phases.manifest_within_s else 0.0
    manifest = phases.onset_s * scale + manifest_share * manifest_bound
    agent = window_share * phases.agent_window_s
    if full_cycle_wait:
        wait = phases.cycle_s
    else:  # the soak starts at the next cycle boundary after the freeze (a whole cycle when on one)
        elapsed = manifest / scale + agent
        wait = phases.cycle_s - math.fmod(elapsed, phases.cycle_s) if phases.cycle_s else 0.0
    challenges = 0.0
    if phases.restart:  # the soak starts on a cycle boundary; the re-check starts on the first one after the settle
        challenges += _restart_wait_s(phases, scale) + phases.cycle_s * scale
    if phases.retrigger:
        challenges += phases.cycle_s * scale
    return (timing.provision_s + phases.warmup_s * scale + manifest + (agent + wait + phases.soak_s) * scale
            + challenges + timing.teardown_s)


def _restart_wait_s(phases: TrialPhases, scale: float) -> float:
    """Real seconds from the soak's end to the restart re-check: the settle, then on to the next cycle
    boundary (the restarts themselves take a moment, not modelled)."""
    settled = phases.soak_s + RESTART_SETTLE_S / scale  # plan seconds since the soak's first boundary
    if not phases.cycle_s:
        return RESTART_SETTLE_S
    return (math.ceil(settled / phases.cycle_s - 1e-9) * phases.cycle_s - phases.soak_s) * scale


def duration_bound(phases: TrialPhases, timing: TrialTiming) -> float:
    """A trial's real seconds with every phase at its bound: the fault shows at its bound, the agent
    uses its whole window, the soak waits a whole cycle."""
    return _real_s(phases, timing, 1.0, 1.0, full_cycle_wait=True)


def sample_duration(phases: TrialPhases, timing: TrialTiming, rng: random.Random) -> float:
    """One trial's real seconds, drawn: when its fault shows, how much of the window its agent uses;
    the cycle wait follows from them."""
    manifest_share = rng.uniform(0.0, timing.manifest_share_high)
    return _real_s(phases, timing, manifest_share, timing.agent.draw(rng), full_cycle_wait=False)


# ---- the analytic model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeShape:
    """A node: its capacity and what the system keeps of it (kubelet, OS, DaemonSets)."""

    name: str
    capacity: Resources
    reserve: Resources

    @classmethod
    def of(cls, vcpu: int, memory_gi: int, *, reserve_cpu_m: int = 250, reserve_memory_mi: int = 1024,
           max_pods: int = 110, daemonset_pods: int = 5, ephemeral_gi: int = 50) -> NodeShape:
        """A `vcpu`/`memory_gi` node with the kubelet's default of 110 pods, `daemonset_pods` of them taken."""
        capacity = Resources(cpu_m=vcpu * 1000, memory_b=memory_gi * GI, ephemeral_b=ephemeral_gi * GI, pods=max_pods)
        reserve = Resources(cpu_m=reserve_cpu_m, memory_b=reserve_memory_mi * MI, pods=daemonset_pods)
        return cls(f"{vcpu} vCPU / {memory_gi} GiB", capacity, reserve)

    @property
    def allocatable(self) -> Resources:
        return self.capacity - self.reserve


def trials_per_node(allocatable: Resources, per_trial: Resources) -> int:
    """min over the resources a trial requests of floor(allocatable / request)."""
    counts = [getattr(allocatable, name) // need for name, need in per_trial.items() if need > 0]
    if not counts:
        raise ValueError("a trial that requests nothing fits without bound")
    return max(0, min(counts))


def campaign_wall_s(trials: int, concurrency: int, duration_s: float) -> float:
    """ceil(T / concurrency) waves of `duration_s` each: exact for equal durations, and an upper bound
    on any greedy schedule when `duration_s` is the longest trial."""
    if concurrency < 1:
        raise ValueError(f"no trial fits: concurrency {concurrency}")
    return math.ceil(trials / concurrency) * duration_s


def makespan_lower_bound(durations: Sequence[float], concurrency: int) -> float:
    """No schedule of these trials on `concurrency` slots ends sooner: max(sum / slots, longest)."""
    if concurrency < 1:
        raise ValueError(f"no trial fits: concurrency {concurrency}")
    return max(math.fsum(durations) / concurrency, max(durations, default=0.0))


def list_schedule_upper_bound(durations: Sequence[float], concurrency: int) -> float:
    """A greedy schedule (a trial starts whenever a slot is free) ends by sum / slots + (1 - 1/slots)
    longest (Graham), and by ceil(T / slots) x longest."""
    if concurrency < 1:
        raise ValueError(f"no trial fits: concurrency {concurrency}")
    longest = max(durations, default=0.0)
    graham = math.fsum(durations) / concurrency + (1 - 1 / concurrency) * longest
    return min(graham, campaign_wall_s(len(durations), concurrency, longest))
