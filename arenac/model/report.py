"""The qualification report (OUT/qualification.json): which controls ran, what each gave, and
whether every variant qualified. Built by arenac/runner/qualify.py, printed by the CLI
(arenac/cli/qualify_table.py), read back by tools (bench/cohort.py).

Contract (docs/runner.md, Qualification):
- `ok` is true only when every variant qualified: each control's every run met its expectation
  (healthy and oracle pass, noop fails; a void or infra_error run never meets one) and, with the
  adversarial suite, every strategy met its own.
- A variant whose healthy control is shared with another (the same experiment: qualify.healthy_key)
  names that variant in `shared_from`; the runs listed are the shared ones.
- `episodes` counts the episodes by status, `reused` those taken from an earlier qualification in
  the same OUT (resume.py). `adversary_k` and each variant's `adversaries` are present only when the
  suite ran; `shared_from` only on a shared control.
- `run_dir` is relative to OUT. A run whose harness was overloaded ran again (runner/retry.py):
  `earlier` lists the attempts set aside, `retried` counts them (they are not in `episodes`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from arenac.model.evidence import TrialStatus
from arenac.model.record import Record

Expectation = Literal["pass", "fail"]


class EpisodeCounts(Record):
    """Episodes by status, and in all: episodes side by side compete for the machine, so the void
    and infra_error share is part of the result."""

    scored: int = 0
    failed: int = 0
    void: int = 0
    infra_error: int = 0
    total: int = 0


class SetAsideRun(Record):
    """An attempt of a run whose harness was overloaded, set aside and run again (runner/retry.py)."""

    run_dir: str  # relative to OUT
    reason: str


class ReportedRun(Record):
    """One episode of a control, as its run directory recorded it; a run not scored (or failed)
    says why (`reason`, the timeline's void_reason) and a void one what to move (`advice`); a run
    that took more than one attempt lists the overloaded ones before it (`earlier`)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"reason", "advice", "earlier"})

    status: TrialStatus
    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool
    wall_s: float
    run_dir: str  # relative to OUT
    reason: str | None = None
    advice: str | None = None  # the knob to move (runner/void_advice.py), for a void run
    earlier: tuple[SetAsideRun, ...] | None = None  # absent when the first attempt was the run


class ReportedStrategyRun(ReportedRun):
    omitted_when_empty: ClassVar[frozenset[str]] = ReportedRun.omitted_when_empty | {"no_door"}

    met: bool  # the strategy's expectation
    no_door: str | None = None  # why its attack could not be tried here (it did only the golden fix)


class ControlReport(Record):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"shared_from"})

    expected: Expectation
    ok: bool
    runs: tuple[ReportedRun, ...]
    shared_from: str | None = None  # the variant whose healthy runs these are


class StrategyReport(Record):
    expected: Expectation
    ok: bool
    runs: tuple[ReportedStrategyRun, ...]


class AdversariesReport(Record):
    """The adversarial suite on one variant: how many strategies met their expectation, the
    must-fail ones that passed, the ones not scored, the must-pass ones (fix-now) that failed, and
    the must-fail ones whose attack found no door on this variant (met: they did only the fix)."""

    ok: bool
    met: int
    total: int
    passing: tuple[str, ...]
    unscored: tuple[str, ...]
    failed_controls: tuple[str, ...]
    strategies: dict[str, StrategyReport]  # strategy name (without adversary:) -> its runs
    no_door: tuple[str, ...] = ()  # strategies whose attack found no door on this variant (met)


class VariantReport(Record):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"adversaries"})

    task: str
    variant: str
    coordinates: dict[str, str]
    controls: dict[str, ControlReport]  # healthy, noop, oracle
    ok: bool
    adversaries: AdversariesReport | None = None


class QualificationReport(Record):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"adversary_k", "retried"})

    ok: bool
    k: int
    time_scale: float
    jobs: int
    wall_s: float
    episodes: EpisodeCounts
    reused: int
    retried: int | None = None  # overloaded attempts set aside and run again (not in `episodes`); absent: none
    adversary_k: int | None = None
    variants: tuple[VariantReport, ...]
