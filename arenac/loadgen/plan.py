"""The load plan: a LoadProfile laid out on the episode clock.

Contract:
- Plan time is in *plan seconds* since the episode clock's zero (the generator's start): real
  seconds divided by the time scale S. Phase durations are plan seconds (a 30 s phase lasts 3 real
  seconds at S = 0.1); rates are requests per *real* second and do not scale, so the substrate sees
  the same request rate, and the same latency behaviour, at any S. A plan second therefore holds
  `rate * S` requests.
- Layout: the warm-up once, then the profile's phases repeating as cycles of `cycle_s` plan
  seconds. The warm-up is rounded up to a whole plan second so that, with whole-second phase
  durations, every phase boundary falls on a whole plan second.
- Anchoring (`anchor_unix`, as `arenac calibrate` and spine's maintenance schedule do): cycles start
  at `anchor_unix + k * cycle_s * S` (Unix time). The first such start at least the warm-up after
  `now` becomes the first cycle; the clock zero is then placed a whole number of plan seconds
  before it (at most one plan second after `now`: the generator waits for it), and the warm-up,
  at the warm-up rate, fills the gap. With `anchor_unix = 0` a maintenance window of period
  `cycle_s` and offset O falls O plan seconds into every cycle. Without an anchor the clock zero is
  `now` and the first cycle starts right after the warm-up.
- Arrivals are at fixed intervals within a phase: the i-th request of a phase at
  `start + i / (rate * S)`, `ceil(duration * rate * S)` of them (a rate of 0 sends nothing).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from arenac.model.library import LoadProfile

WARMUP = "warmup"
_EPS = 1e-9


@dataclass(frozen=True)
class PlanPhase:
    name: str
    start_s: float  # plan seconds
    end_s: float
    rate: float  # requests per real second

    def arrivals(self, time_scale: float) -> Iterator[float]:
        """Scheduled plan times of this phase's requests."""
        per_plan_second = self.rate * time_scale
        if per_plan_second <= 0:
            return
        count = math.ceil((self.end_s - self.start_s) * per_plan_second - _EPS)
        for index in range(count):
            yield self.start_s + index / per_plan_second


@dataclass(frozen=True)
class Plan:
    profile: LoadProfile
    time_scale: float
    warmup_s: float  # plan seconds of warm-up; the first cycle starts here
    clock_zero_unix: float

    @property
    def cycle_s(self) -> float:
        return self.profile.cycle_s

    def phases(self) -> Iterator[PlanPhase]:
        """Every phase in order: the warm-up (when it lasts), then cycles without end."""
        if self.warmup_s > 0:
            yield PlanPhase(WARMUP, 0.0, self.warmup_s, self.profile.warmup.rate if self.profile.warmup else 0.0)
        for cycle in itertools.count():
            start = self.warmup_s + cycle * self.cycle_s
            for phase in self.profile.phases:
                if phase.duration_s > 0:
                    yield PlanPhase(phase.name, start, start + phase.duration_s, phase.rate)
                start += phase.duration_s

    def phases_until(self, end_s: float) -> list[PlanPhase]:
        """The phases that start before `end_s`, the last one cut at `end_s`."""
        out = []
        for phase in self.phases():
            if phase.start_s >= end_s:
                break
            out.append(PlanPhase(phase.name, phase.start_s, min(phase.end_s, end_s), phase.rate))
        return out

    def phase_at(self, t: float) -> str:
        if t < self.warmup_s:
            return WARMUP
        offset = (t - self.warmup_s) % self.cycle_s
        for phase in self.profile.phases:
            if offset < phase.duration_s:
                return phase.name
            offset -= phase.duration_s
        return self.profile.phases[-1].name  # rounding at the very end of a cycle

    def arrivals(self, until_s: float | None = None) -> Iterator[tuple[float, str]]:
        """(plan time, phase name) of every scheduled request before `until_s` (None: forever, or
        until the warm-up ends when every phase of the cycle has rate 0)."""
        idle_cycles = all(phase.rate <= 0 for phase in self.profile.phases)
        for phase in self.phases():
            if idle_cycles and phase.name != WARMUP:
                return
            if until_s is not None and phase.start_s >= until_s:
                return
            for t in phase.arrivals(self.time_scale):
                if until_s is not None and t >= until_s:
                    return
                yield t, phase.name

    def next_cycle_start(self, t: float) -> float:
        """The first cycle boundary at or after plan time `t`."""
        if t <= self.warmup_s:
            return self.warmup_s
        return self.warmup_s + math.ceil((t - self.warmup_s) / self.cycle_s - _EPS) * self.cycle_s

    def unix(self, t: float) -> float:
        return self.clock_zero_unix + t * self.time_scale

    def describe(self) -> dict[str, Any]:
        return {"clock_zero_unix": self.clock_zero_unix, "time_scale": self.time_scale,
                "warmup_end_s": self.warmup_s, "cycle_s": self.cycle_s}


def make_plan(profile: LoadProfile, time_scale: float, now_unix: float, anchor_unix: float | None = None) -> Plan:
    """Lay `profile` out from `now_unix` (see the module contract for the anchoring)."""
    if time_scale <= 0:
        raise ValueError(f"time scale must be positive, got {time_scale}")
    if profile.cycle_s <= 0:
        raise ValueError(f"load profile {profile.name!r} has no phase with a positive duration")
    warmup = math.ceil(profile.warmup.duration_s - _EPS) if profile.warmup else 0
    if anchor_unix is None:
        return Plan(profile, time_scale, float(warmup), now_unix)
    length = profile.cycle_s * time_scale
    first_cycle = anchor_unix + math.ceil((now_unix + warmup * time_scale - anchor_unix) / length - _EPS) * length
    warmup_s = math.floor((first_cycle - now_unix) / time_scale + _EPS)
    return Plan(profile, time_scale, float(warmup_s), first_cycle - warmup_s * time_scale)
