"""arenac/k8s/capacity.py and the scheduler simulation of bench/capacity.py: a trial's requests summed
over a real bundle's chart rendered with Helm (checked against the chart's own numbers and, apart,
against the rendered containers read here), the init-container rule and replicas, trials per node on
both sides of a resource boundary, a trial's duration from its plan, and the simulation against the
analytic model. Offline: no cluster, no episode."""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenac.k8s.capacity import (
    GI,
    MI,
    AgentWindowUse,
    CapacityError,
    NodeShape,
    Resources,
    TrialPhases,
    TrialTiming,
    bundle_requests,
    campaign_wall_s,
    duration_bound,
    list_schedule_upper_bound,
    makespan_lower_bound,
    parse_quantity,
    pod_requests,
    sample_duration,
    trial_requests,
    trials_per_node,
)
from arenac.k8s.helm import render_chart
from arenac.model.plan import Plan
from arenac.pipeline import compile_paths, write_bundles
from helpers import ROOT

APP, HARNESS = "arenac-trial", "arenac-harness"


def _bench():
    """bench/capacity.py as a module (the bench is a script, not a package)."""
    if "bench_capacity" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_capacity", ROOT / "bench" / "capacity.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_capacity"] = module
        spec.loader.exec_module(module)
    return sys.modules["bench_capacity"]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """slow-reads (a runtime variant has the fault-init Job) and durable-queue-acl (Redis persisted on
    a claim), compiled as `arenac compile` would: variant id -> bundle."""
    out = tmp_path_factory.mktemp("build")
    write_bundles(compile_paths(["tasks/slow-reads.arena", "tasks/durable-queue-acl.arena"]), out)
    return {path.parent.name: path.parent for path in sorted(out.glob("*/*/manifest.json"))}


# ---- what the rendered chart says, read here without the module -----------------------------------

def _milli(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _bytes(text: str) -> int:
    return int(text[:-2]) * {"Ki": 1024, "Mi": MI, "Gi": GI}[text[-2:]]


def _expected_from_manifests(objects, namespace: str) -> tuple[int, int, int]:
    """cpu millicores, memory bytes and pods of the namespace's pods: every container's own request
    times the object's replicas (this chart has no init containers and no limit without a request)."""
    cpu = memory = pods = 0
    for body in objects:
        if body["kind"] not in ("Deployment", "StatefulSet", "Job"):
            continue
        if (body["metadata"].get("namespace") or APP) != namespace:
            continue
        replicas = body["spec"].get("replicas", 1) if body["kind"] != "Job" else 1
        for container in body["spec"]["template"]["spec"]["containers"]:
            requests = container["resources"]["requests"]
            cpu += replicas * _milli(requests["cpu"])
            memory += replicas * _bytes(requests["memory"])
        pods += replicas
    return cpu, memory, pods


def test_a_real_bundle_sums_to_the_charts_own_requests(bundles):
    checked = 0
    for variant, bundle in bundles.items():
        if not variant.startswith("slow-reads"):
            continue
        requests = bundle_requests(bundle, APP)
        objects = render_chart(bundle / "chart", namespace=APP)
        # the chart's templates: postgres 100m/256Mi, redis 50m/64Mi, six services 50m/96Mi each
        assert requests.application_total == Resources(cpu_m=100 + 50 + 6 * 50, memory_b=(256 + 64 + 6 * 96) * MI,
                                                       pods=8), variant
        # the harness: the load generator 200m/128Mi and the grader 50m/64Mi, and the fault-init Job
        # 50m/64Mi when the variant injects at start at the runtime layer
        fault_init = any(o["kind"] == "Job" and o["metadata"]["name"] == "arenac-fault-init" for o in objects)
        extra = Resources(cpu_m=50, memory_b=64 * MI, pods=1) if fault_init else Resources()
        assert requests.harness_total == Resources(cpu_m=250, memory_b=192 * MI, pods=2) + extra, variant
        for namespace, total in ((APP, requests.application_total), (HARNESS, requests.harness_total)):
            cpu, memory, pods = _expected_from_manifests(objects, namespace)
            assert (total.cpu_m, total.memory_b, total.pods) == (cpu, memory, pods), (variant, namespace)
        assert requests.agent == ()  # the chart gives the agent a ServiceAccount, no pod
        assert requests.surge == Resources(cpu_m=50, memory_b=96 * MI, pods=1)  # a service's rolling restart
        assert requests.peak == requests.total + requests.surge
        assert (requests.volume_claims, requests.volume_storage_b) == (1, GI)  # postgres's claim template
        checked += 1
    assert checked >= 2
    assert any(bundle_requests(b, APP).harness_total.pods == 3 for v, b in bundles.items() if "slow-reads" in v)


def test_a_persisted_redis_adds_its_claim(bundles):
    persisted = [bundle_requests(b, APP) for v, b in bundles.items() if v.startswith("durable-queue-acl")]
    assert persisted
    for requests in persisted:
        assert (requests.volume_claims, requests.volume_storage_b) == (2, 2 * GI)


def test_replicas_from_the_charts_values_multiply_a_service(bundles):
    bundle = next(b for v, b in bundles.items() if v.startswith("slow-reads"))
    plain = trial_requests(render_chart(bundle / "chart", namespace=APP), APP, HARNESS)
    wider = trial_requests(render_chart(bundle / "chart", {"spine": {"services": {"gateway": {"replicas": 3}}}},
                                        namespace=APP), APP, HARNESS)
    assert wider.application_total - plain.application_total == Resources(cpu_m=100, memory_b=192 * MI, pods=2)
    gateway = next(w for w in wider.application if w.name == "spine-gateway")
    assert (gateway.kind, gateway.replicas) == ("Deployment", 3)
    assert wider.surge == Resources(cpu_m=50, memory_b=96 * MI, pods=1)  # maxSurge 25% of 3, rounded up: one pod


# ---- quantities, pods, objects ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("100m", Fraction(1, 10)), ("0.5", Fraction(1, 2)), ("1.1m", Fraction(11, 10_000)), ("2", 2),
    ("256Mi", 256 * MI), ("1Gi", GI), ("1G", 10 ** 9), ("1e3", 1000),
    ("500k", 500_000), (".5", Fraction(1, 2)), (3, 3),
])
def test_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1 Gi", "1GB", "ten", "1mi", True])
def test_not_quantities(text):
    with pytest.raises(CapacityError):
        parse_quantity(text)


def _container(cpu: str | None = None, memory: str | None = None, *, limits: dict | None = None, **extra) -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests, **({"limits": limits} if limits else {})}, **extra}


def test_init_containers_count_as_the_larger_of_the_init_peak_and_the_apps():
    spec = {"initContainers": [_container("500m", "64Mi"), _container("100m", "1Gi")],
            "containers": [_container("200m", "128Mi"), _container("100m", "128Mi")]}
    # cpu: max(500, 200 + 100); memory: max(1Gi, 256Mi); init containers run one at a time, never summed
    assert pod_requests(spec) == Resources(cpu_m=500, memory_b=GI, pods=1)
    spec["containers"].append(_container("400m", "2Gi"))
    assert pod_requests(spec) == Resources(cpu_m=700, memory_b=2 * GI + 256 * MI, pods=1)


def test_sidecars_run_on_beside_the_rest():
    sidecar = _container("100m", "50Mi", restartPolicy="Always")
    spec = {"initContainers": [sidecar, _container("400m", "10Mi")], "containers": [_container("300m", "100Mi")]}
    # the init step after the sidecar: 400 + 100; the pod's run: 300 + 100
    assert pod_requests(spec) == Resources(cpu_m=500, memory_b=150 * MI, pods=1)


def test_a_limit_without_a_request_is_the_request_and_overhead_adds():
    spec = {"containers": [_container(None, "64Mi", limits={"cpu": "250m", "memory": "1Gi"})],
            "overhead": {"cpu": "10m", "memory": "16Mi"}}
    assert pod_requests(spec) == Resources(cpu_m=260, memory_b=80 * MI, pods=1)
    assert pod_requests({"containers": [_container(None, None, limits={"ephemeral-storage": "2Gi"})]}) == \
        Resources(ephemeral_b=2 * GI, pods=1)


def _workload(kind: str, name: str, spec: dict, namespace: str | None = None, labels: dict | None = None) -> dict:
    pod = {"metadata": {"labels": labels or {}}, "spec": {"containers": [_container("100m", "100Mi")]}}
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    body = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    body["spec"] = pod["spec"] if kind == "Pod" else {**spec, "template": pod}
    if kind == "Pod":
        body["metadata"]["labels"] = labels or {}
    return body


def test_replicas_jobs_pods_and_claims():
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "5Gi"}}}}
    objects = [
        _workload("Deployment", "web", {"replicas": 3}),
        _workload("Deployment", "one", {}),  # replicas default to 1
        _workload("StatefulSet", "db", {"replicas": 2, "volumeClaimTemplates": [claim]}),
        _workload("Job", "batch", {"parallelism": 4, "completions": 2}, HARNESS),  # at most 2 at once
        _workload("Job", "once", {"suspend": True}, HARNESS),  # suspended: it runs later in the trial
        _workload("Pod", "bare", {}, HARNESS),
        _workload("Pod", "agent", {}, APP, labels={"arenac.dev/role": "agent"}),
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "extra"},
         "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}},
    ]
    requests = trial_requests(objects, APP, HARNESS)
    pod = Resources(cpu_m=100, memory_b=100 * MI, pods=1)
    assert requests.application_total == pod.times(3 + 1 + 2)
    assert requests.harness_total == pod.times(2 + 1 + 1)
    assert requests.agent_total == pod
    assert (requests.volume_claims, requests.volume_storage_b) == (3, 11 * GI)
    assert requests.surge == pod  # a Deployment's rolling restart
    assert len(requests.pods()) == 6 + 4 + 1 + 1


def test_what_a_trial_cannot_be_counted_by():
    with pytest.raises(CapacityError, match="DaemonSet"):
        trial_requests([_workload("DaemonSet", "agent", {})], APP, HARNESS)
    with pytest.raises(CapacityError, match="kube-system"):
        trial_requests([_workload("Deployment", "x", {}, "kube-system")], APP, HARNESS)
    recreate = trial_requests([_workload("Deployment", "redis", {"strategy": {"type": "Recreate"}})], APP, HARNESS)
    assert recreate.surge == Resources()


# ---- trials per node -----------------------------------------------------------------------------

TRIAL = Resources(cpu_m=800, memory_b=1248 * MI, pods=12)


@pytest.mark.parametrize("fits", [1, 2, 5, 8])
@pytest.mark.parametrize("resource", ["cpu_m", "memory_b", "pods"])
def test_trials_per_node_on_both_sides_of_a_boundary(fits, resource):
    roomy = Resources(cpu_m=10 ** 6, memory_b=10 ** 15, ephemeral_b=10 ** 12, pods=10 ** 4)
    exact = Resources(**{**roomy.__dict__, resource: getattr(TRIAL, resource) * fits})
    assert trials_per_node(exact, TRIAL) == fits
    short = Resources(**{**exact.__dict__, resource: getattr(exact, resource) - 1})  # a millicore, a byte, a pod
    assert trials_per_node(short, TRIAL) == fits - 1


def test_node_shapes_keep_their_reserve():
    node = NodeShape.of(4, 16)
    assert node.allocatable == Resources(cpu_m=3750, memory_b=15 * GI, ephemeral_b=50 * GI, pods=105)
    assert trials_per_node(node.allocatable, TRIAL) == 4  # cpu: 3750 // 800
    assert trials_per_node(NodeShape.of(16, 64).allocatable, TRIAL) == 8  # pods: 105 // 12


def test_campaign_formulas():
    assert campaign_wall_s(3000, 80, 3600.0) == 38 * 3600.0
    assert makespan_lower_bound([1.0, 1.0, 4.0], 2) == 4.0
    assert makespan_lower_bound([3.0, 3.0, 3.0], 2) == 4.5
    assert list_schedule_upper_bound([3.0, 3.0, 3.0], 2) == 6.0
    with pytest.raises(ValueError):
        campaign_wall_s(1, 0, 1.0)


# ---- a trial's duration ------------------------------------------------------------------------------

PHASES = TrialPhases(warmup_s=20, onset_s=30, manifest_within_s=30, agent_window_s=600, cycle_s=60, soak_s=120,
                     restart=True, retrigger=False)


def test_the_episodes_constants_are_the_models():
    from arenac.k8s import capacity
    from arenac.runner.episode import RESTART_SETTLE_S
    from arenac.runner.onsets import HUNG_REQUEST_VISIBLE_S

    assert (capacity.RESTART_SETTLE_S, capacity.HUNG_REQUEST_VISIBLE_S) == (RESTART_SETTLE_S, HUNG_REQUEST_VISIBLE_S)


def test_duration_bound_by_hand():
    timing = TrialTiming(provision_s=60, teardown_s=45)
    # 60 provision + 20 warm-up + 30 onset + 30 bound + 600 window + 60 cycle + 120 soak + 45, and the
    # restart: the soak ends on a boundary, the 2 s settle runs past it, so the re-check waits for the
    # next one (60 s) and observes a cycle (60 s)
    assert duration_bound(PHASES, timing) == 1085
    # at 0.1 the manifestation bound is the hung request's 11 real seconds; the restart settles 2 real
    # seconds (20 plan s) and its re-check starts at the next boundary, 60 plan s after the soak's end
    assert duration_bound(PHASES, TrialTiming(time_scale=0.1, provision_s=0, teardown_s=0)) == pytest.approx(106)


def test_a_settle_longer_than_a_cycle_waits_for_the_boundary_after_it():
    # at time scale 0.01 the 2 real seconds of settle are 200 plan s: past three 60 s boundaries after
    # the soak's end (120 s soak from a boundary), so the re-check starts 240 plan s (2.4 real s) after it
    short = TrialTiming(time_scale=0.01, provision_s=0, teardown_s=0)
    without = duration_bound(replace(PHASES, restart=False), short)
    assert duration_bound(PHASES, short) - without == pytest.approx(2.4 + 0.6)


def test_the_soak_waits_for_the_next_cycle():
    timing = TrialTiming(provision_s=60, teardown_s=45, agent=AgentWindowUse(full_share=1.0), manifest_share_high=0.0)
    # the fault shows at its onset (30 s after the handover), the agent uses its 600 s: 630 s from the
    # warm-up's end, so the soak starts 30 s later, at 660
    assert sample_duration(PHASES, timing, random.Random(0)) == 60 + 20 + 30 + 600 + 30 + 120 + 120 + 45


def test_phases_from_a_compiled_plan(bundles):
    bundle = next(b for v, b in bundles.items() if v.startswith("slow-reads"))
    plan = Plan.model_validate_json((bundle / "plan.json").read_text())
    phases = TrialPhases.from_plan(plan)
    awaited = [f for f in plan.faults if not f.decoy and f.onset.kind != "in_window"]
    assert phases.manifest_within_s == max(f.manifest_within_s for f in awaited)
    assert (phases.warmup_s, phases.agent_window_s, phases.soak_s) == (
        plan.timeline.warmup_s, plan.timeline.agent_window_s, plan.timeline.soak_s)
    assert phases.restart == bool(plan.challenges.restart)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2 ** 32), st.floats(0.05, 1.0))
def test_a_drawn_duration_never_exceeds_the_bound(seed, scale):
    timing = TrialTiming(time_scale=scale)
    assert sample_duration(PHASES, timing, random.Random(seed)) <= duration_bound(PHASES, timing) + 1e-9


# ---- the simulation against the analytic model ---------------------------------------------------------

COHORT_TRIAL = [Resources(cpu_m=100, memory_b=256 * MI, pods=1), Resources(cpu_m=50, memory_b=64 * MI, pods=1),
                *[Resources(cpu_m=50, memory_b=96 * MI, pods=1)] * 6, Resources(cpu_m=200, memory_b=128 * MI, pods=1),
                Resources(cpu_m=50, memory_b=64 * MI, pods=1), Resources(cpu_m=50, memory_b=96 * MI, pods=1)]
PER_TRIAL = sum(COHORT_TRIAL, Resources())
SHAPES = [NodeShape.of(2, 8), NodeShape.of(4, 16), NodeShape.of(8, 32), NodeShape.of(16, 64), NodeShape.of(3, 64)]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(SHAPES), st.integers(1, 6), st.integers(1, 5), st.integers(1, 10 ** 5),
       st.sampled_from(["pinned", "least-allocated", "first-fit"]))
def test_equal_durations_in_whole_waves_are_the_analytic_wall(shape, nodes, waves, duration, policy):
    bench = _bench()
    slots = nodes * trials_per_node(shape.allocatable, PER_TRIAL)
    trials = [bench.SimTrial(tuple(COHORT_TRIAL), float(duration))] * (waves * slots)
    result = bench.simulate(trials, [shape.allocatable] * nodes, slots, policy)
    analytic = campaign_wall_s(len(trials), slots, float(duration))
    if policy == "pinned" or result.waits_for_room == 0:  # every wave placed whole: exactly the waves
        assert result.makespan_s == analytic
        assert (result.most_running, result.waits_for_room) == (slots, 0)
    else:  # pod by pod, the nodes' remainders can hold fewer trials than the formula counts
        assert result.makespan_s > analytic
    assert (policy == "pinned") <= (result.waits_for_room == 0)


def test_pod_by_pod_spreading_can_fall_short_of_the_formula():
    """Three 4 vCPU nodes hold 5 trials of 750m each by the formula (3750m allocatable, no slack): the
    default scheduler's spreading leaves cpu on every node and places 14, so a campaign at --jobs 15 runs
    its 15th trial a wave late; pinned to a node each, all 15 fit."""
    bench = _bench()
    node = NodeShape.of(4, 16).allocatable
    assert trials_per_node(node, PER_TRIAL) == 5
    assert bench.placed_at_once(COHORT_TRIAL, [node] * 3) == 14
    assert bench.placed_at_once(COHORT_TRIAL, [node] * 3, "pinned") == 15
    result = bench.simulate([bench.SimTrial(tuple(COHORT_TRIAL), 100.0)] * 15, [node] * 3, 15)
    assert (result.makespan_s, result.most_running) == (200.0, 14)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SHAPES), st.integers(1, 4), st.sampled_from(["pinned", "least-allocated", "first-fit"]),
       st.data())
def test_varying_durations_never_beat_the_lower_bound(shape, nodes, policy, data):
    bench = _bench()
    slots = nodes * trials_per_node(shape.allocatable, PER_TRIAL)
    jobs = data.draw(st.integers(1, slots))
    durations = data.draw(st.lists(st.floats(1.0, 10_000.0), min_size=1, max_size=60))
    result = bench.simulate([bench.SimTrial(tuple(COHORT_TRIAL), d) for d in durations],
                            [shape.allocatable] * nodes, jobs, policy)
    assert result.makespan_s >= makespan_lower_bound(durations, jobs) * (1 - 1e-12)
    assert result.most_running <= jobs
    if result.waits_for_room == 0:  # every free job slot took the next trial at once: a greedy list schedule
        assert result.makespan_s <= list_schedule_upper_bound(durations, jobs) * (1 + 1e-12)


def test_a_trial_that_does_not_fit_waits_whole():
    bench = _bench()
    node = Resources(cpu_m=1000, memory_b=GI, pods=10)
    pods = (Resources(cpu_m=600, pods=1), Resources(cpu_m=300, pods=1))
    free = [node, node]
    # the first trial spreads (least-allocated): 600 on node 0, 300 on node 1; the second fits (600 on
    # node 1, 300 on node 0); a third does not, and leaves nothing placed
    assert bench.place(pods, free, [node, node]) == [0, 1]
    assert bench.place(pods, free, [node, node]) == [1, 0]
    before = list(free)
    assert bench.place(pods, free, [node, node]) is None
    assert free == before
    result = bench.simulate([bench.SimTrial(pods, 10.0)] * 3, [node, node], jobs=3)
    assert (result.makespan_s, result.most_running, result.waits_for_room) == (20.0, 2, 1)
