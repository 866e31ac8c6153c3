"""Qualification: prove a variant sound by running its controls k times each.

    healthy  no fault, the no-op agent        must pass (reward 1)
    noop     the faults, the no-op agent      must fail (reward 0, and scored: the fault manifested)
    oracle   the faults, the golden fix       must pass

A void or infrastructure-failed run never satisfies an expectation. Results go to
`qualification.json` (a `QualificationReport`: arenac/model/report.py) with a top-level "ok".

With `adversarial`, every strategy of the built-in suite (arenac/runner/adversaries) also runs
against every variant, `adversary_k` times (1 by default; `k` is for the three controls): each
must-fail strategy must be scored with reward 0, and the `fix-now` control must be scored with
reward 1. A variant with a passing adversary, or a failing fix-now, does not qualify. A must-fail
strategy whose attack found no door on the variant's surface (its log says so: adversaries.no_door)
did only the golden fix: whatever it earned, it is met, and the report gives the reason (`no_door`).

Variants whose healthy controls are the same experiment share them (`healthy_key`): with no fault
injected, an episode runs the vendored substrate chart (with the task's healthy settings,
chart/healthy-values.yaml, when it has any), and the no-op agent uses no tool, so it depends on the
plan's timeline, load, snapshots, challenges and gates and those settings, not on the variant's
faults or access surface. The variants of one task are usually one such group; the report names
the variant whose runs another's healthy control shares (`shared_from`).

Qualification resumes: rerun with the same `out`, it reuses every episode whose run directory is
complete and holds that very episode (resume.py) and runs the others; the report counts the
reused episodes (`reused`).

An episode whose harness was overloaded (an infra_error `harness overloaded: ...`: it measured the
machine) runs again, up to `retries` times, a recorded one on resume too (retry.py); each run lists
the attempts set aside (`earlier`, their run directories kept beside it) and the report counts them
(`retried`). Any other infra_error or void stands.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from arenac.model.plan import HEALTHY_VALUES
from arenac.model.report import (
    AdversariesReport,
    ControlReport,
    EpisodeCounts,
    QualificationReport,
    ReportedRun,
    ReportedStrategyRun,
    SetAsideRun,
    StrategyReport,
    VariantReport,
)
from arenac.runner import adversaries as suite
from arenac.runner import resume, retry
from arenac.runner.bundle import RunnableBundle
from arenac.runner.options import ClusterTarget, EpisodeOptions, EpisodeResult, Isolation, backend_name
from arenac.runner.records import write_model
from arenac.runner.trial import run_episode
from arenac.runner.void_advice import void_advice

DEFAULT_ISOLATION = Isolation()  # frozen: one shared default is safe

CONTROLS: tuple[tuple[str, str, bool, str], ...] = (
    # name, agent, inject faults, expected
    ("healthy", "noop", False, "pass"),
    ("noop", "noop", True, "fail"),
    ("oracle", "oracle", True, "pass"),
)


@dataclass(frozen=True)
class ControlRun:  # frozen: cached_property writes the instance's __dict__ directly, which is allowed
    bundle: RunnableBundle
    control: str
    index: int
    result: EpisodeResult
    reused: bool = False  # the result of a complete run directory from an earlier qualification
    earlier: tuple[retry.SetAside, ...] = ()  # overloaded attempts set aside before this one (retry.py)

    @property
    def expected(self) -> str:
        if self.control.startswith(suite.PREFIX):
            return suite.get(self.control[len(suite.PREFIX):]).expected
        return next(c[3] for c in CONTROLS if c[0] == self.control)

    @cached_property
    def no_door(self) -> str | None:
        """Why a must-fail strategy's attack could not be tried on this variant, from its log; None
        for the controls, fix-now and every attack that found its door."""
        if not self.control.startswith(suite.PREFIX) or self.expected != "fail":
            return None
        try:
            return suite.no_door((self.result.out / "agent.log").read_text(errors="replace"))
        except OSError:  # no log: the episode never started its agent
            return None

    @property
    def satisfied(self) -> bool:
        if self.result.status == "scored" and self.no_door is not None:  # the golden fix alone: no finding
            return True
        if self.result.status == "failed":  # the agent broke what the harness needed: a failure, scored
            return self.expected == "fail"
        if self.result.status != "scored":
            return False
        return (self.result.reward == 1) == (self.expected == "pass")


def healthy_key(bundle: RunnableBundle) -> str:
    """What a healthy control of this bundle depends on (see the module docstring), hashed."""
    plan = bundle.plan.model_dump(mode="json")
    for varying in ("variant", "coordinates", "faults", "access", "tools"):
        plan.pop(varying)
    digest = hashlib.sha256(json.dumps(plan, sort_keys=True).encode())
    substrate_chart = bundle.directory / "chart" / "charts"
    for path in sorted(p for p in substrate_chart.rglob("*") if p.is_file()):
        digest.update(path.relative_to(substrate_chart).as_posix().encode() + b"\0" + path.read_bytes())
    healthy_values = bundle.directory / HEALTHY_VALUES  # a task's `healthy { }` settings, when it has them
    if healthy_values.is_file():
        digest.update(b"healthy-values\0" + healthy_values.read_bytes())
    return digest.hexdigest()


def status_counts(runs: list[ControlRun]) -> EpisodeCounts:
    """Episodes by status (scored, failed, void, infra_error) and in all: episodes side by side
    compete for the machine, so the void and infra_error share is part of the result."""
    counts = {status: 0 for status in ("scored", "failed", "void", "infra_error")}
    for run in runs:
        counts[run.result.status] += 1
    return EpisodeCounts(**counts, total=len(runs))


def _reported(run: ControlRun, out: Path) -> ReportedRun:
    result = run.result
    advice = void_advice(run.bundle.plan, result.reason) if result.status == "void" else None
    return ReportedRun(status=result.status, reward=result.reward, outcome=result.outcome,
                       safe_repair=result.safe_repair, wall_s=result.wall_s,
                       run_dir=result.out.relative_to(out).as_posix(),
                       reason=(result.reason or None) if result.status != "scored" else None, advice=advice,
                       earlier=tuple(SetAsideRun(run_dir=a.run_dir.relative_to(out).as_posix(), reason=a.reason)
                                     for a in run.earlier) or None)


def adversary_controls(strategies: list[str] | None = None) -> tuple[tuple[str, str, bool, str], ...]:
    """The suite's strategies as controls (name, agent, inject faults, expected); all by default."""
    chosen = [suite.get(name) for name in strategies] if strategies else list(suite.STRATEGIES)
    return tuple((suite.PREFIX + s.name, suite.PREFIX + s.name, True, s.expected) for s in chosen)


def qualify(bundles: list[RunnableBundle], k: int, time_scale: float, out: Path, jobs: int = 1,
            stop: threading.Event | None = None, on_result=None, adversarial: bool = False,
            adversary_k: int = 1, strategies: list[str] | None = None, isolation: Isolation = DEFAULT_ISOLATION,
            launch: retry.Launch | None = None, retries: int = 1,
            cluster: ClusterTarget | None = None) -> QualificationReport:
    """Run the controls (and the suite); `launch` runs one episode (in this process by default; the
    CLI runs each in a worker process of its own, bound to the kernel: worker.py); an episode whose
    harness was overloaded runs again, up to `retries` times (retry.py); `cluster`: each episode a
    trial on that cluster (kube/cluster_trial.py), the healthy control included."""
    launch = launch or run_episode  # looked up now, not at import: tests replace run_episode
    stop = stop or threading.Event()
    healthy_of: dict[str, RunnableBundle] = {}  # healthy key -> the bundle whose healthy runs are shared
    representative = {id(b): healthy_of.setdefault(healthy_key(b), b) for b in bundles}
    work = [(bundle, control, index) for bundle in bundles for control in CONTROLS for index in range(k)
            if control[0] != "healthy" or representative[id(bundle)] is bundle]
    attacks = adversary_controls(strategies) if adversarial else ()
    work += [(bundle, control, index) for bundle in bundles for control in attacks for index in range(adversary_k)]

    def one(item) -> ControlRun:
        bundle, (name, agent, inject, _), index = item
        run_dir = out / bundle.plan.task / bundle.plan.variant / f"{name.replace(':', '-')}-{index + 1}"
        if stop.is_set():  # interrupted: the episodes not yet started are not started at all
            return ControlRun(bundle, name, index, EpisodeResult(run_dir, "infra_error", 0, False, False, 0.0,
                                                                 "interrupted before it started"))
        recorded = resume.recorded_result(run_dir, bundle, agent, inject, time_scale, backend_name(cluster))
        if recorded is not None and not (retries and retry.overloaded(recorded)):
            # this very episode, complete, from an earlier qualification (resume.py)
            run = ControlRun(bundle, name, index, recorded, reused=True)
            if on_result is not None:
                on_result(run)
            return run
        options = EpisodeOptions(agent=agent, time_scale=time_scale, out=run_dir, inject_faults=inject,
                                 isolation=isolation, cluster=cluster)
        attempts = retry.run_retrying(launch, bundle, options, stop, retries, first=recorded)
        run = ControlRun(bundle, name, index, attempts.result, earlier=attempts.earlier)
        if on_result is not None:
            on_result(run)
        return run

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs = list(pool.map(one, work))
    variants = []
    for bundle in bundles:
        controls = {}
        for name, _, _, expected in CONTROLS:
            source = representative[id(bundle)] if name == "healthy" else bundle
            mine = [r for r in runs if r.bundle is source and r.control == name]
            controls[name] = ControlReport(expected=expected, ok=all(r.satisfied for r in mine),
                                           runs=tuple(_reported(r, out) for r in mine),
                                           shared_from=source.plan.variant if source is not bundle else None)
        adversaries = _adversaries_of([r for r in runs if r.bundle is bundle], attacks, out) if adversarial else None
        variants.append(VariantReport(
            task=bundle.plan.task, variant=bundle.plan.variant, coordinates=bundle.plan.coordinates,
            controls=controls, adversaries=adversaries,
            ok=all(c.ok for c in controls.values()) and (adversaries is None or adversaries.ok)))
    report = QualificationReport(
        ok=all(r.satisfied for r in runs), k=k, time_scale=time_scale, jobs=max(1, jobs),
        wall_s=round(time.monotonic() - started, 1), episodes=status_counts(runs),
        reused=sum(1 for r in runs if r.reused),  # episodes not run again (resume.py)
        retried=sum(len(r.earlier) for r in runs) or None,  # overloaded attempts set aside (retry.py)
        adversary_k=adversary_k if adversarial else None, variants=tuple(variants))
    write_model(out / "qualification.json", report)
    return report


def _adversaries_of(runs: list[ControlRun], attacks, out: Path) -> AdversariesReport:
    """Each strategy's runs on one variant, and the summary: how many met their expectation, the
    must-fail strategies that passed, the ones that were not scored (void, infra_error), the ones
    whose attack found no door here."""
    strategies: dict[str, StrategyReport] = {}
    passing, unscored, without_door = [], [], []
    for name, _, _, expected in attacks:
        mine = [r for r in runs if r.control == name]
        short = name[len(suite.PREFIX):]
        strategies[short] = StrategyReport(
            expected=expected, ok=bool(mine) and all(r.satisfied for r in mine),
            runs=tuple(ReportedStrategyRun(**_reported(r, out).model_dump(), met=r.satisfied, no_door=r.no_door)
                       for r in mine))
        if any(r.result.status == "scored" and r.result.reward == 1 and expected == "fail" and r.no_door is None
               for r in mine):
            passing.append(short)
        if any(r.no_door is not None for r in mine):
            without_door.append(short)
        if any(r.result.status in ("void", "infra_error") for r in mine):  # failed: scored, as a failure
            unscored.append(short)
    met = sum(1 for s in strategies.values() if s.ok)
    return AdversariesReport(
        ok=met == len(strategies), met=met, total=len(strategies), passing=tuple(passing), unscored=tuple(unscored),
        no_door=tuple(without_door),
        failed_controls=tuple(n for n, s in strategies.items() if s.expected == "pass" and not s.ok),
        strategies=strategies)
