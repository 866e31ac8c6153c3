"""Load profiles of spine, laid out on the wall clock.

Contract: the profiles are the library's (`load standard` and friends in
library/substrates/spine/profiles.arena), so the baseline is measured with exactly what tasks name
as `spine.standard`. The compiler reads them (`arenac.lower.library`) and hands one over as a plain
`LoadProfile`; this module never parses. It only schedules one: a warm-up, then
`cycles` repetitions of its phases (peak then trough). Durations are multiplied by the time scale;
rates are not. Cycles are anchored to the wall clock like the maintenance schedule: the first
cycle starts at the first multiple of the (scaled) cycle length after the warm-up's own duration,
so a maintenance window with period = cycle length and offset O always falls O seconds into a
cycle. With the healthy schedule (period 60 s, offset 40 s, 6 s) that is 10 s into the trough; a
bad offset (say 10 s) lands it on every peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from arenac.model.library import LoadProfile

CALIBRATION_CYCLES = 2


@dataclass(frozen=True)
class ScheduledPhase:
    name: str
    start: float  # Unix time
    duration_s: float
    rate_rps: float


def schedule(profile: LoadProfile, now: float, time_scale: float, cycles: int) -> list[ScheduledPhase]:
    """Concrete phases from `now`: warm-up until a cycle boundary, then the cycles."""
    length = profile.cycle_s * time_scale
    warmup_s = profile.warmup.duration_s * time_scale if profile.warmup else 0.0
    first_cycle = math.ceil((now + warmup_s) / length) * length
    # without a warm-up in the profile the wait for the boundary is idle (rate 0)
    phases = [ScheduledPhase("warmup", now, first_cycle - now, profile.warmup.rate if profile.warmup else 0.0)]
    start = first_cycle
    for _ in range(cycles):
        for phase in profile.phases:
            scaled = phase.duration_s * time_scale
            phases.append(ScheduledPhase(phase.name, start, scaled, phase.rate))
            start += scaled
    return phases


def describe(profile: LoadProfile, time_scale: float, cycles: int) -> dict[str, Any]:
    return {**profile.model_dump(mode="json"), "name": f"spine.{profile.name}", "cycles": cycles,
            "time_scale": time_scale, "anchored": "cycles start at multiples of the cycle length (Unix time)"}
