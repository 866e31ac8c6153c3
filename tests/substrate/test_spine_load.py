"""The standard load profile: its schedule, the baseline arithmetic, and a healthy stack under it."""

from __future__ import annotations

import asyncio

import pytest

from arenac.lower.library import load_library
from arenac.model.library import LoadProfile, Phase
from arenac.substrate.calibrate import LoadGenerator, RunResult, Sample, _percentile, aggregate
from arenac.substrate.spine.profile import schedule
from arenac.substrate.spine.spec import SpineSpec

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

STANDARD = load_library().substrates["spine"].loads["standard"]


def test_cycles_are_anchored_to_the_wall_clock() -> None:
    assert STANDARD.warmup is not None and STANDARD.cycle_s == 60
    phases = schedule(STANDARD, now=1000.0, time_scale=1.0, cycles=2)
    assert [p.name for p in phases] == ["warmup", "peak", "trough", "peak", "trough"]
    assert phases[0].duration_s >= 20 and phases[1].start % 60 == 0  # warm-up runs to a cycle boundary
    assert [p.start for p in phases[1:]] == [phases[1].start + 30 * i for i in range(4)]
    scaled = schedule(STANDARD, now=1000.0, time_scale=0.1, cycles=2)
    assert scaled[1].start % 6 == 0 and scaled[1].duration_s == 3.0 and scaled[1].rate_rps == 60


def test_percentiles_and_aggregation_over_runs() -> None:
    assert _percentile([float(v) for v in range(1, 101)], 99) == 99.0
    assert _percentile([5.0], 50) == 5.0

    def run(latency_ms: float, errors: int) -> RunResult:
        result = RunResult()
        result.phase_seconds.update({"warmup": 1.0, "peak": 10.0})
        result.samples = [Sample("send", "peak", latency_ms / 1000, 201) for _ in range(100 - errors)]
        result.samples += [Sample("send", "peak", 10.0, 0) for _ in range(errors)]
        return result

    profile = LoadProfile(name="p", warmup=Phase(name="warmup", duration_s=1, rate=1),
                          phases=(Phase(name="peak", duration_s=10, rate=10),), mix={"send": 1})
    baseline = aggregate([run(2, 0), run(4, 0), run(3, 10)], profile, 1.0)
    row = baseline["routes"]["send"]["peak"]
    assert row["p50_ms"] == 3.0 and row["spread"]["p50_ms"] == {"median": 3.0, "min": 2.0, "max": 4.0}
    assert row["spread"]["error_rate"]["max"] == 0.1 and row["error_rate"] == 0.0
    assert row["goodput_rps"] == 10.0 and row["requests"] == 300
    # p99 per run: 2 ms, 4 ms, and 10 s in the run whose errors were timeouts: median 4, spread to 10 s
    assert baseline["routes"]["all"]["all"]["spread"]["p99_ms"] == {"median": 4.0, "min": 2.0, "max": 10000.0}


def test_healthy_stack_under_the_standard_load_has_no_errors(make_stack) -> None:
    spine = make_stack(SpineSpec().with_sets(["TIME_SCALE=0.05"]))  # maintenance windows land in the troughs
    result = asyncio.run(LoadGenerator(spine.ep.gateway, STANDARD, time_scale=0.05).run())
    summary = result.summary()
    assert summary["all"]["all"].requests >= 140
    errors = {(s.route, s.phase, s.status) for s in result.samples if not s.good}
    assert not errors, errors
    assert result.max_start_lag_s < 0.5
    spine.wait_for(lambda: spine.backlog() == 0, 10, "fan-out to catch up")
