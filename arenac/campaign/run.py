"""Running a campaign: every agent on every variant, k trials each, recorded as they finish.

Contract:
- `plan_trials(agents, bundles, k)` lists the trials in the order they start: trial 1 of every
  (variant, agent) pair first, then trial 2, and so on, so that an interrupted campaign has as
  many agents and variants measured as it could. Each trial's run directory is
  `runs/<agent>/<task>/<variant>/trial-<n>` under the campaign directory.
- `run_campaign(trials, out, store, time_scale, jobs, retries, stop, launch, on_start, on_done)`
  runs them, `jobs` side by side. A trial whose run directory already holds that very episode,
  complete (runner/resume.py: same bundle digest, agent, time scale), is not run again: its row is
  rebuilt from the directory and recorded (`reused`). Any other runs; a trial that ends in an
  infra_error runs again, up to `retries` times, its earlier attempts moved aside to
  `<run dir>.infra-error-N` (runner/retry.py) and listed in its row.
- Every finished trial's row is written to the store (campaign/store.py) before the next event;
  the row is built from the run directory (verdict.json's checks, the failure classes and the
  full fix of campaign/taxonomy.py), never from memory alone, so a row and its evidence cannot
  disagree. Evidence the taxonomy cannot read leaves the row without classes, with the reason.
- Stop (Ctrl-C, SIGTERM: the `stop` event): trials not started are not started; a trial the stop
  interrupted is not recorded (its run directory says "interrupted": a rerun runs it again). The
  outcome counts both as `left`.
- The harness never imports the compiler: the bundles are opened by the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from arenac.campaign.store import CampaignStore
from arenac.campaign.taxonomy import analyse
from arenac.model.campaign import CheckResult, SetAsideAttempt, TrialRow
from arenac.model.evidence import Timeline
from arenac.model.verdict import Verdict
from arenac.runner import resume, retry
from arenac.runner.bundle import RunnableBundle
from arenac.runner.options import ClusterTarget, EpisodeOptions, EpisodeResult, Isolation, backend_name
from arenac.verify.evidence import EvidenceError, read_model

SET_ASIDE_LABEL = "infra-error"


@dataclass(frozen=True)
class PlannedTrial:
    agent: str  # the campaign file's name for it
    agent_spec: str  # what it runs (oracle, noop, adversary:NAME, cmd:...)
    bundle: RunnableBundle
    trial: int  # 1..k

    @property
    def run_dir(self) -> Path:
        """Relative to the campaign directory."""
        plan = self.bundle.plan
        return Path("runs") / self.agent / plan.task / plan.variant / f"trial-{self.trial}"

    @property
    def label(self) -> str:
        return f"{self.agent} on {self.bundle.plan.variant} #{self.trial}"


@dataclass(frozen=True)
class CampaignOutcome:
    rows: tuple[TrialRow, ...]  # this invocation's, ran or reused, in plan order
    ran: int
    reused: int
    left: int  # not started, or interrupted: a rerun runs them

    @property
    def complete(self) -> bool:
        return self.left == 0


def plan_trials(agents: dict[str, str], bundles: Sequence[RunnableBundle], k: int) -> list[PlannedTrial]:
    return [PlannedTrial(name, spec, bundle, trial) for trial in range(1, k + 1) for bundle in bundles
            for name, spec in agents.items()]


def run_campaign(trials: Sequence[PlannedTrial], out: Path, store: CampaignStore, time_scale: float, jobs: int = 1,
                 retries: int = 1, stop: threading.Event | None = None, launch: retry.Launch | None = None,
                 isolation: Isolation | None = None, cluster: ClusterTarget | None = None,
                 on_start: Callable[[PlannedTrial], None] | None = None,
                 on_done: Callable[[PlannedTrial, TrialRow | None, bool], None] | None = None) -> CampaignOutcome:
    """Run `trials` (see the module's contract); `on_done(trial, row or None when left, reused)`."""
    from arenac.runner.trial import run_episode

    launch = launch or run_episode
    stop = stop or threading.Event()
    isolation = isolation or Isolation()

    def one(planned: PlannedTrial) -> tuple[TrialRow | None, bool]:
        if stop.is_set():
            return _done(planned, None, False)
        run_dir = out / planned.run_dir
        recorded = resume.recorded_result(run_dir, planned.bundle, planned.agent_spec, True, time_scale,
                                          backend_name(cluster))
        if recorded is not None and not (retries and retry.infra_error(recorded)):
            return _done(planned, _record(planned, recorded, out, store), True)
        if on_start is not None:
            on_start(planned)
        options = EpisodeOptions(agent=planned.agent_spec, time_scale=time_scale, out=run_dir, isolation=isolation,
                                 cluster=cluster)
        attempts = retry.run_retrying(launch, planned.bundle, options, stop, retries, first=recorded,
                                      retryable=retry.infra_error, label=SET_ASIDE_LABEL)
        if attempts.result.status == "infra_error" and attempts.result.reason == "interrupted":
            return _done(planned, None, False)
        return _done(planned, _record(planned, attempts.result, out, store), False)

    def _done(planned: PlannedTrial, row: TrialRow | None, reused: bool) -> tuple[TrialRow | None, bool]:
        if on_done is not None:
            on_done(planned, row, reused)
        return row, reused

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, trials))
    rows = tuple(row for row, _ in results if row is not None)
    reused = sum(1 for row, was_reused in results if row is not None and was_reused)
    return CampaignOutcome(rows=rows, ran=len(rows) - reused, reused=reused, left=len(results) - len(rows))


def _record(planned: PlannedTrial, result: EpisodeResult, out: Path, store: CampaignStore) -> TrialRow:
    row = trial_row(planned, result, out)
    store.record(row)
    return row


def trial_row(planned: PlannedTrial, result: EpisodeResult, out: Path) -> TrialRow:
    """One finished trial's row, from its run directory (verdict.json's checks) and its result."""
    plan = planned.bundle.plan
    run_dir = out / planned.run_dir
    analysis = analyse(run_dir)
    return TrialRow(
        agent=planned.agent, agent_spec=planned.agent_spec, task=plan.task, variant=plan.variant,
        trial=planned.trial, faults={fault.name: fault.layer for fault in plan.faults},
        access=plan.access.name, substrate=plan.substrate, status=result.status, reward=result.reward,
        outcome=result.outcome, safe_repair=result.safe_repair, reason=result.reason or None,
        checks=_checks(run_dir), wall_s=round(result.wall_s, 3), run_dir=planned.run_dir.as_posix(),
        set_aside=_set_aside(run_dir, out), failure_classes=analysis.classes, full_fix=analysis.full_fix,
        taxonomy_problem=analysis.problem)


def _checks(run_dir: Path) -> tuple[CheckResult, ...]:
    try:
        verdict = read_model(run_dir / "verdict.json", Verdict, "verdict.json")
    except EvidenceError:  # no verdict: the trial was not graded (its reason says why)
        return ()
    if verdict.gates is None:
        return ()
    gates = (("outcome", verdict.gates.outcome.checks), ("safety", verdict.gates.safety.checks))
    return tuple(CheckResult(gate=gate, text=check.text, passed=check.passed, detail=check.detail)
                 for gate, checks in gates for check in checks)


def _set_aside(run_dir: Path, out: Path) -> tuple[SetAsideAttempt, ...]:
    """The attempts moved aside before this one (`<run dir>.infra-error-N`, oldest first), each
    with its timeline's reason: read from the directories, so a resumed campaign lists them too."""
    found = []
    n = 1
    while (aside := run_dir.with_name(f"{run_dir.name}.{SET_ASIDE_LABEL}-{n}")).is_dir():
        try:
            reason = read_model(aside / "evidence" / "timeline.json", Timeline, "timeline.json").void_reason
        except EvidenceError:
            reason = None
        found.append(SetAsideAttempt(run_dir=aside.relative_to(out).as_posix(),
                                     reason=reason or "infra_error (its timeline is unreadable)"))
        n += 1
    return tuple(found)
