"""Capacity benchmark: each trial's resource requests (from its bundle's chart, rendered with Helm),
trials per node for a few node shapes, and the wall time of a campaign of T trials on N nodes, the
analytic model (arenac/k8s/capacity.py) against a discrete-event simulation of the scheduler.

    .venv/bin/python bench/capacity.py [--build DIR] [--seed 1] [--provision-s 60] [--teardown-s 45]
        [--reserve-cpu-m 250] [--reserve-memory-mi 1024] [--max-pods 110]

Without --build it compiles tasks/ into a temporary directory under build/ with the project's own
pipeline (`compile_paths`, `write_bundles`). Output is deterministic for the same bundles and options.

The simulation: N identical nodes with their allocatable resources; a FIFO queue of T trials, each
its pods' requests (the chart's pods, and the one extra pod a rolling restart needs) and a duration
drawn from its plan's phases (seeded). At time 0 and at every completion (all the trials ending at
that instant first), the head of the queue is admitted while fewer than J run: its pods are placed
one by one as kube-scheduler places pods, filtering the nodes where the pod fits (cpu, memory,
ephemeral storage, pod slots) and scoring them by the default NodeResourcesFit strategy,
LeastAllocated (the mean over cpu and memory of the share left free after placing it; ties to the
lowest node, where kube-scheduler picks one at random). A trial whose pods do not all fit waits with
nothing placed (the runner admits a whole trial or none: a half-placed trial's pods would sit Pending
until its readiness bound made it an infra_error), and everything behind it waits too. Pod-by-pod
spreading can leave room on no single node that the per-node formula counts on: the simulation is
what checks the analytic model's trial slots against the scheduler's placement. Not modelled:
BalancedAllocation and the other scoring plugins, image pulls, volume binding, preemption.

Figures and the command are recorded in docs/kubernetes.md ("Capacity").
"""

from __future__ import annotations

import argparse
import glob
import heapq
import math
import os
import random
import sys
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arenac.k8s.capacity import (  # noqa: E402  (after the path: the bench runs from a checkout)
    GI,
    MI,
    SCRIPTED_AGENTS,
    AgentWindowUse,
    NodeShape,
    Resources,
    TrialPhases,
    TrialRequests,
    TrialTiming,
    campaign_wall_s,
    duration_bound,
    list_schedule_upper_bound,
    makespan_lower_bound,
    sample_duration,
    trials_per_node,
)

SHAPES = ((2, 8), (4, 16), (8, 32), (16, 64))
NODE_COUNTS = (1, 3, 10)
FIELD_TRIALS = 3000
FIELD_HOUR_S = 3600.0
REFERENCE = ROOT / "examples" / "campaigns" / "reference.toml"


# ---- the discrete-event model -------------------------------------------------------------------

@dataclass(frozen=True)
class SimTrial:
    pods: tuple[Resources, ...]
    duration_s: float


@dataclass(frozen=True)
class SimResult:
    makespan_s: float
    most_running: int
    waits_for_room: int  # admissions refused because the head trial's pods did not fit


def _score(free: Resources, allocatable: Resources, pod: Resources) -> float:
    """kube-scheduler's LeastAllocated score: the mean share of cpu and memory left after the pod."""
    cpu = (free.cpu_m - pod.cpu_m) / allocatable.cpu_m if allocatable.cpu_m else 0.0
    memory = (free.memory_b - pod.memory_b) / allocatable.memory_b if allocatable.memory_b else 0.0
    return (cpu + memory) / 2


def place(pods: Sequence[Resources], free: list[Resources], allocatable: Sequence[Resources],
          policy: str = "least-allocated") -> list[int] | None:
    """Place every pod (changing `free`) and return each pod's node, or place none and return None.
    `least-allocated` and `first-fit` place pod by pod; `pinned` puts the whole trial on one node (the
    least allocated where it all fits), as a backend that pins each trial's pods to a node would."""
    if policy == "pinned":
        total = sum(pods, Resources())
        feasible = [n for n, room in enumerate(free) if total.fits_in(room)]
        if not feasible:
            return None
        node = max(feasible, key=lambda n: (_score(free[n], allocatable[n], total), -n))
        free[node] = free[node] - total
        return [node] * len(pods)
    chosen: list[int] = []
    for pod in pods:
        feasible = [n for n, room in enumerate(free) if pod.fits_in(room)]
        if not feasible:
            for node, placed in zip(chosen, pods, strict=False):
                free[node] = free[node] + placed
            return None
        if policy == "first-fit":
            node = feasible[0]
        else:
            node = max(feasible, key=lambda n: (_score(free[n], allocatable[n], pod), -n))
        free[node] = free[node] - pod
        chosen.append(node)
    return chosen


def placed_at_once(pods: Sequence[Resources], allocatable: Sequence[Resources], policy: str = "least-allocated") -> int:
    """How many copies of one trial the placement puts on the empty nodes before one does not fit."""
    free = list(allocatable)
    count = 0
    while place(pods, free, allocatable, policy) is not None:
        count += 1
    return count


def simulate(trials: Sequence[SimTrial], allocatable: Sequence[Resources], jobs: int,
             policy: str = "least-allocated") -> SimResult:
    """Run the queue of trials on the nodes, at most `jobs` at once; when the last one ends."""
    free = list(allocatable)
    queue = deque(range(len(trials)))
    ending: list[tuple[float, int, list[int]]] = []  # (end time, trial, its pods' nodes)
    now, running, most, waits = 0.0, 0, 0, 0

    def admit() -> None:
        nonlocal running, most, waits
        while queue and running < jobs:
            nodes = place(trials[queue[0]].pods, free, allocatable, policy)
            if nodes is None:
                waits += 1
                return
            index = queue.popleft()
            heapq.heappush(ending, (now + trials[index].duration_s, index, nodes))
            running += 1
            most = max(most, running)

    def release(index: int, nodes: list[int]) -> None:
        nonlocal running
        for node, pod in zip(nodes, trials[index].pods, strict=True):
            free[node] = free[node] + pod
        running -= 1

    admit()
    while ending:
        now, index, nodes = heapq.heappop(ending)
        release(index, nodes)
        while ending and ending[0][0] == now:
            _, index, nodes = heapq.heappop(ending)
            release(index, nodes)
        admit()
    if queue:
        raise ValueError(f"trial {queue[0]} fits on no node even when the cluster is empty")
    return SimResult(now, most, waits)


# ---- the cohort --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bundle:
    task: str
    variant: str
    requests: TrialRequests
    phases: TrialPhases


def load_bundles(build: Path) -> list[Bundle]:
    from arenac.k8s.capacity import bundle_requests
    from arenac.model.plan import Plan

    bundles = []
    for manifest in sorted(build.glob("*/*/manifest.json")):
        plan = Plan.model_validate_json((manifest.parent / "plan.json").read_text(encoding="utf-8"))
        bundles.append(Bundle(plan.task, plan.variant, bundle_requests(manifest.parent), TrialPhases.from_plan(plan)))
    if not bundles:
        raise SystemExit(f"{build}: no bundles (DIR/<task>/<variant>/manifest.json)")
    return bundles


def compile_cohort(out: Path) -> None:
    from arenac.pipeline import compile_paths, write_bundles

    os.chdir(ROOT)  # the specs by the names `arenac compile tasks/` gives them (they reach the bundles)
    write_bundles(compile_paths(["tasks"]), out)


def _mi(count: int) -> str:
    if count and count % GI == 0:
        return f"{count // GI}Gi"
    return f"{count // MI}Mi" if count % MI == 0 else f"{count / MI:.1f}Mi"


def _req(resources: Resources) -> str:
    eph = f" {_mi(resources.ephemeral_b)} eph" if resources.ephemeral_b else ""
    return f"{resources.cpu_m}m {_mi(resources.memory_b)}{eph} {resources.pods}p"


def requests_table(bundles: Sequence[Bundle]) -> None:
    rows: dict[tuple[str, str], list[str]] = {}
    for bundle in bundles:
        r = bundle.requests
        agent = _req(r.agent_total) if r.agent else "none in the chart"
        line = (f"| {_req(r.application_total)} | {_req(r.harness_total)} | {agent} | {_req(r.surge)} | "
                f"{r.volume_claims} ({_mi(r.volume_storage_b)}) | **{_req(r.peak)}** |")
        rows.setdefault((bundle.task, line), []).append(bundle.variant)
    print("| task | variants | application ns | harness ns | agent | rolling-restart surge | PVCs (storage) | "
          "trial peak |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (task, line), variants in rows.items():
        print(f"| {task} | {len(variants)} {line}")
    workloads = sorted({(w.namespace, w.kind, w.name, w.replicas, _req(w.each))
                        for b in bundles for w in (*b.requests.application, *b.requests.harness)})
    print("\nthe pod-creating objects (kind/name x replicas: one pod's requests), over every bundle:")
    print("; ".join(f"{ns}: {kind}/{name} x{replicas}: {each}" for ns, kind, name, replicas, each in workloads))


def most_of(bundles: Sequence[Bundle]) -> Resources:
    peak = Resources()
    for bundle in bundles:
        peak = peak.most(bundle.requests.peak)
    return peak


def node_table(shapes: Sequence[NodeShape], bundles: Sequence[Bundle]) -> None:
    per_trial = most_of(bundles)
    print(f"per trial (the cohort's largest peak, resource by resource): {_req(per_trial)}")
    print("| node | allocatable | by cpu | by memory | by pods | trials per node |")
    print("| --- | --- | --- | --- | --- | --- |")
    for shape in shapes:
        a = shape.allocatable
        by = {name: getattr(a, name) // need for name, need in per_trial.items() if need}
        print(f"| {shape.name} | {_req(a)} | {by['cpu_m']} | {by['memory_b']} | {by['pods']} | "
              f"**{trials_per_node(a, per_trial)}** |")
    kinds: dict[Resources, tuple[Resources, ...]] = {}
    for bundle in bundles:
        kinds.setdefault(bundle.requests.peak, tuple(bundle.requests.pods()))
    print("\nplaced at once on N empty nodes, one kind of trial: N x trials per node (analytic) / the scheduler's "
          "pod-by-pod least-allocated placement (simulated) / each trial pinned to one node (simulated)")
    print("| node | trial peak | " + " | ".join(f"N = {n}" for n in NODE_COUNTS) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in NODE_COUNTS) + " |")
    for shape in shapes:
        for peak, pods in sorted(kinds.items(), key=lambda item: (item[0].cpu_m, item[0].memory_b, item[0].pods)):
            cells = []
            for nodes in NODE_COUNTS:
                allocatable = [shape.allocatable] * nodes
                analytic = nodes * trials_per_node(shape.allocatable, peak)
                spread = placed_at_once(pods, allocatable)
                pinned = placed_at_once(pods, allocatable, "pinned")
                mark = " **short**" if spread < analytic else ""
                cells.append(f"{analytic} / {spread} / {pinned}{mark}")
            print(f"| {shape.name} | {_req(peak)} | " + " | ".join(cells) + " |")


@dataclass(frozen=True)
class Campaign:
    name: str
    trials: int
    timing: TrialTiming
    phases: tuple[TrialPhases, ...]  # trial i runs phases[i % len] with requests[i % len]
    requests: tuple[TrialRequests, ...]
    jobs: int | None  # None: as many as the cluster's slots


def _pct(simulated: float, analytic: float) -> str:
    return f"{(simulated - analytic) / analytic:+.1%}" if analytic else "-"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def campaign_table(campaign: Campaign, shapes: Sequence[NodeShape], seed: int) -> None:
    count = campaign.trials
    rng = random.Random(seed)
    pick = [i % len(campaign.phases) for i in range(count)]
    bounds = [duration_bound(campaign.phases[p], campaign.timing) for p in pick]
    drawn = [sample_duration(campaign.phases[p], campaign.timing, rng) for p in pick]
    pods = [tuple(campaign.requests[p].pods()) for p in pick]
    per_trial = Resources()
    for requests in campaign.requests:
        per_trial = per_trial.most(requests.peak)
    longest = max(bounds)
    print(f"\n{campaign.name}: T = {count} trials, longest {_hours(longest)} at its bound, mean drawn "
          f"{_hours(math.fsum(drawn) / count)} (seed {seed})")
    print("| node | N | slots | jobs | waves | analytic, at the bound | simulated, at the bound | diff | "
          "lower bound, drawn | simulated, drawn | Graham upper, drawn | diff vs lower |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for shape in shapes:
        for nodes in NODE_COUNTS:
            slots = nodes * trials_per_node(shape.allocatable, per_trial)
            jobs = min(campaign.jobs or slots, slots)
            if jobs < 1:
                print(f"| {shape.name} | {nodes} | 0 | - | - | a trial does not fit | | | | | | |")
                continue
            allocatable = [shape.allocatable] * nodes
            analytic = campaign_wall_s(count, jobs, longest)
            at_bound = simulate([SimTrial(p, d) for p, d in zip(pods, bounds, strict=True)], allocatable, jobs)
            lower = makespan_lower_bound(drawn, jobs)
            upper = list_schedule_upper_bound(drawn, jobs)
            varied = simulate([SimTrial(p, d) for p, d in zip(pods, drawn, strict=True)], allocatable, jobs)
            blocked = " (placement waited)" if at_bound.waits_for_room or varied.waits_for_room else ""
            print(f"| {shape.name} | {nodes} | {slots} | {jobs} | {math.ceil(count / jobs)} | {_hours(analytic)} | "
                  f"{_hours(at_bound.makespan_s)} | {_pct(at_bound.makespan_s, analytic)} | {_hours(lower)} | "
                  f"{_hours(varied.makespan_s)}{blocked} | {_hours(upper)} | {_pct(varied.makespan_s, lower)} |")


def reference_campaign(bundles: Sequence[Bundle], timing: TrialTiming) -> Campaign:
    """examples/campaigns/reference.toml: its agents x its variants x k, at its time scale."""
    from arenac.campaign.spec_file import load_campaign

    spec = load_campaign(REFERENCE).spec
    tasks: set[str] = set()
    for selector in spec.variants:
        for path in glob.glob(str(REFERENCE.parent / selector.path)):
            tasks.add(Path(path).stem)
    chosen = [b for b in bundles if b.task in tasks]
    trials = len(chosen) * len(spec.agents) * spec.k
    return Campaign(f"arenac's reference campaign ({REFERENCE.relative_to(ROOT)}: {len(spec.agents)} scripted agents "
                    f"x {len(chosen)} variants x k={spec.k}, time scale {spec.time_scale:g}; its jobs = {spec.jobs} is "
                    "a one-machine figure, here jobs = the cluster's slots)", trials,
                    replace(timing, time_scale=spec.time_scale, agent=SCRIPTED_AGENTS),
                    tuple(b.phases for b in chosen), tuple(b.requests for b in chosen), None)


def field_campaign(bundles: Sequence[Bundle], timing: TrialTiming) -> Campaign:
    """3,000 trials of an hour each at time scale 1: the cohort's longest plan, its agent window
    stretched until the trial's bound is one hour, the cohort's requests."""
    longest = max(bundles, key=lambda b: (duration_bound(b.phases, timing), b.variant))
    rest = duration_bound(replace(longest.phases, agent_window_s=0.0), timing)
    phases = replace(longest.phases, agent_window_s=FIELD_HOUR_S - rest)
    return Campaign(f"the field's reference campaign ({FIELD_TRIALS} trials of one hour at time scale 1: "
                    f"{longest.task}'s plan with an agent window of {phases.agent_window_s:g} s)", FIELD_TRIALS,
                    replace(timing, time_scale=1.0), (phases,), tuple(b.requests for b in bundles), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, help="a build tree (DIR/<task>/<variant>/); default: compile tasks/")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--provision-s", type=float, default=60.0, help="real seconds to provision a trial")
    parser.add_argument("--teardown-s", type=float, default=45.0, help="real seconds to grade and tear it down")
    parser.add_argument("--reserve-cpu-m", type=int, default=250, help="a node's system reserve, millicores")
    parser.add_argument("--reserve-memory-mi", type=int, default=1024, help="a node's system reserve, MiB")
    parser.add_argument("--max-pods", type=int, default=110, help="the kubelet's pods per node (default 110)")
    options = parser.parse_args()
    if options.build:
        bundles = load_bundles(options.build)
    else:
        (ROOT / "build").mkdir(exist_ok=True)  # where `arenac compile` writes: /tmp here is slow per file
        with tempfile.TemporaryDirectory(dir=ROOT / "build", prefix=".bench-capacity-") as out:
            compile_cohort(Path(out))
            bundles = load_bundles(Path(out))
    timing = TrialTiming(provision_s=options.provision_s, teardown_s=options.teardown_s, agent=AgentWindowUse())
    shapes = [NodeShape.of(cpu, memory, reserve_cpu_m=options.reserve_cpu_m,
                           reserve_memory_mi=options.reserve_memory_mi, max_pods=options.max_pods)
              for cpu, memory in SHAPES]
    print(f"{len(bundles)} bundles of {len({b.task for b in bundles})} tasks; chart rendered with Helm into "
          "namespace arenac-trial (application) beside the chart's harness namespace")
    requests_table(bundles)
    print(f"\nnodes: capacity less a reserve of {options.reserve_cpu_m}m cpu, {options.reserve_memory_mi}Mi memory, "
          f"5 DaemonSet pods of the kubelet's {options.max_pods}")
    node_table(shapes, bundles)
    print(f"\ntrial timing: provisioning {options.provision_s:g} s and teardown with grading {options.teardown_s:g} s "
          "(real, assumed: no Kubernetes backend measures them yet); a fault shows at a uniform share of its bound; "
          f"agents use all their window with probability {timing.agent.full_share:g}, else a uniform share in "
          f"[{timing.agent.low:g}, {timing.agent.high:g}] (scripted agents: [0, {SCRIPTED_AGENTS.high:g}])")
    campaign_table(field_campaign(bundles, timing), shapes, options.seed)
    campaign_table(reference_campaign(bundles, timing), shapes, options.seed)


if __name__ == "__main__":
    main()
