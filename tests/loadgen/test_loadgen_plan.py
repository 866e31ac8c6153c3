"""The plan: phases on the episode clock, arrivals per phase, anchoring, the route mix."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from arenac.loadgen.plan import make_plan
from arenac.loadgen.routes import RouteMix
from arenac.substrate.spine.profile import schedule
from loadgen.stub import profile
from spine_services.maintenance import Schedule

STANDARD_SHAPE = profile([("peak", 30, 60), ("trough", 30, 15)], {"send": 40, "read": 35, "unread": 15,
                                                                   "login": 5, "channels": 5}, warmup=(20, 20))


def test_warmup_once_then_phases_repeat_as_cycles() -> None:
    plan = make_plan(STANDARD_SHAPE, 1.0, now_unix=1000.0)
    assert plan.clock_zero_unix == 1000.0 and plan.warmup_s == 20
    phases = plan.phases_until(200)
    assert [(p.name, p.start_s, p.end_s, p.rate) for p in phases] == [
        ("warmup", 0, 20, 20), ("peak", 20, 50, 60), ("trough", 50, 80, 15), ("peak", 80, 110, 60),
        ("trough", 110, 140, 15), ("peak", 140, 170, 60), ("trough", 170, 200, 15)]
    assert plan.phases_until(95)[-1].end_s == 95  # the last phase is cut at the end
    assert [plan.phase_at(t) for t in (0, 19.99, 20, 49.99, 50, 80, 200.5)] == [
        "warmup", "warmup", "peak", "peak", "trough", "peak", "peak"]
    assert [plan.next_cycle_start(t) for t in (3, 20, 20.5, 80, 139)] == [20, 20, 80, 80, 140]


@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_arrivals_per_phase_keep_real_rates_and_scale_durations(scale: float) -> None:
    plan = make_plan(STANDARD_SHAPE, scale, now_unix=0.0)
    arrivals = list(plan.arrivals(until_s=140))  # the warm-up and two cycles
    per_phase = Counter((plan.phase_at(t), name) for t, name in arrivals)
    # durations are plan seconds, rates per real second: a phase holds duration * S * rate requests
    assert per_phase == {("warmup", "warmup"): round(20 * scale * 20), ("peak", "peak"): round(2 * 30 * scale * 60),
                         ("trough", "trough"): round(2 * 30 * scale * 15)}
    peak = [t for t, name in arrivals if 20 <= t < 50]
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(peak)}
    assert gaps == {round(1 / (60 * scale), 9)}  # evenly spaced, in plan seconds
    assert all(t < 140 for t, _ in arrivals) and arrivals == sorted(arrivals)


def test_a_phase_at_rate_zero_sends_nothing_and_warmup_rounds_to_a_whole_second() -> None:
    idle = profile([("busy", 2, 10), ("idle", 3, 0)], {"ok": 1}, warmup=(1.5, 4))
    plan = make_plan(idle, 1.0, now_unix=0.0)
    assert plan.warmup_s == 2  # phase boundaries stay on whole plan seconds
    times = [t for t, _ in plan.arrivals(until_s=12)]
    assert len(times) == 8 + 2 * 20
    assert not [t for t in times if plan.phase_at(t) == "idle"]


@pytest.mark.parametrize("scale", [1.0, 0.1, 0.05])
@pytest.mark.parametrize("now", [1_700_000_000.0, 1_700_000_017.3, 1_700_000_059.99])
def test_anchored_cycles_match_calibrate_and_the_maintenance_schedule(scale: float, now: float) -> None:
    plan = make_plan(STANDARD_SHAPE, scale, now_unix=now, anchor_unix=0.0)
    assert now <= plan.clock_zero_unix < now + scale  # the generator waits less than a plan second
    assert plan.warmup_s == int(plan.warmup_s) and plan.warmup_s >= 20
    first_cycle = plan.unix(plan.warmup_s)
    assert first_cycle / (60 * scale) == pytest.approx(round(first_cycle / (60 * scale)), abs=1e-6)
    assert first_cycle == pytest.approx(schedule(STANDARD_SHAPE, now, scale, 1)[1].start, abs=1e-6)
    # spine's healthy maintenance window (period 60, offset 40) falls 40 plan seconds into every cycle
    window = Schedule(60 * scale, 40 * scale, 6 * scale)
    for cycle in range(3):
        start = plan.unix(plan.warmup_s + cycle * 60)
        offset_s = (window.next_start(start) - start) / scale
        assert offset_s == pytest.approx(40, abs=1e-5)
        assert plan.phase_at(plan.warmup_s + cycle * 60 + offset_s) == "trough"


def test_anchor_other_than_zero() -> None:
    plan = make_plan(STANDARD_SHAPE, 0.5, now_unix=1000.0, anchor_unix=7.0)
    assert (plan.unix(plan.warmup_s) - 7.0) % 30 == pytest.approx(0, abs=1e-6)
    assert plan.unix(plan.warmup_s) >= 1000.0 + 20 * 0.5


def test_route_mix_proportions_and_seed() -> None:
    mix = RouteMix(dict(STANDARD_SHAPE.mix))
    rng = random.Random(7)
    draws = [mix.draw(rng) for _ in range(40_000)]
    counts = Counter(draws)
    total = sum(STANDARD_SHAPE.mix.values())
    for route, weight in STANDARD_SHAPE.mix.items():
        assert counts[route] / len(draws) == pytest.approx(weight / total, abs=0.01), route
    rng = random.Random(7)
    assert [mix.draw(rng) for _ in range(1000)] == draws[:1000]  # a seed gives the same sequence
    rng = random.Random(8)
    assert [mix.draw(rng) for _ in range(1000)] != draws[:1000]
    with pytest.raises(ValueError):
        RouteMix({"a": 0})


def test_a_profile_whose_cycles_are_idle_schedules_only_the_warmup() -> None:
    idle = profile([("idle", 2, 0)], {"ok": 1}, warmup=(2, 3))
    times = [t for t, _ in make_plan(idle, 1.0, now_unix=0.0).arrivals()]  # would never end without the check
    assert times == pytest.approx([0, 1 / 3, 2 / 3, 1, 4 / 3, 5 / 3])
