"""A run directory or a campaign directory read into the report's model (report/model.py).

Contract:
- `collect(path, plot_limit)`: PATH is a run directory (arenac/rundir.py `is_run_dir`: one trial,
  graded: its verdict.json) or a campaign directory (its results.sqlite: every trial recorded,
  arenac/campaign/store.py). Anything else, a run marked incomplete, a run without a verdict, a
  results database that cannot be used or holds no trial, raises `ReportInputError` with one
  line saying what PATH is and what was expected.
- A trial's checks are its verdict.json's (every check and sub-check, in the spec's units, with
  its window); a campaign trial whose run directory is gone keeps the checks of its row.
- Failure classes and full fix (arenac/campaign/taxonomy.py, docs/campaign.md "Failure classes"):
  a campaign trial's are those its row recorded (`failure_classes`, `full_fix`,
  `taxonomy_problem`), never recomputed, so the report says what `arenac campaign` said, even of
  a trial whose run directory is gone; a run directory's are `taxonomy.analyse(run_dir)`'s. A
  scored failure whose evidence the taxonomy could not read (a `taxonomy_problem`) is counted
  apart (`UNCLASSIFIED`), not as a failure without a class.
- Timelines are read for at most `plot_limit` trials, chosen in this order: the trials that did
  not pass (scored failures, failed, void, infra_error: what a reader looks into), then passes;
  within each group the agents take turns (every agent's first such trial, in agent order, then
  every agent's second, ...), each agent's trials in (task, variant, trial) order, so that a
  limit spreads over the agents rather than filling with one agent's (a no-op's 48 failures
  would crowd out an oracle's one). Reading a ledger is most of a report's time;
  a trial not plotted says so in its note, naming the limit. A run directory is always plotted.
- The statistics are `stats.summarize` over the trials (with their full fix), with pass@k and pass^k at k = the most
  trials of one agent on one variant when that is more than 1, and 2,000 bootstrap resamples, as
  `arenac campaign` prints its leaderboard (so the two agree).
- Deterministic: trials sorted by (agent, task, variant, trial); run directories relative to PATH.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Literal

from arenac.campaign import taxonomy
from arenac.campaign.stats import AGENT_BREAKDOWNS, summarize
from arenac.campaign.store import CampaignStore, StoreError
from arenac.campaign.trials import Trial
from arenac.model.baseline import Baseline
from arenac.model.campaign import TrialRow
from arenac.model.run import RunRecord
from arenac.model.verdict import Check, Verdict
from arenac.report.model import UNCLASSIFIED, ClassCount, Report, ReportCheck, ReportTrial
from arenac.report.tables import breakdown_table, class_table, leaderboard
from arenac.report.timeline import TimelineUnreadable, read_timeline
from arenac.rundir import CAMPAIGN_DATABASE, RUN_RECORD, incomplete_reason, is_run_dir
from arenac.verify.evidence import EvidenceError, read_model

DEFAULT_PLOT_LIMIT = 50
RESAMPLES = 2000  # as cli/campaign_run.py's leaderboard
UNKNOWN = "unknown"
BREAKDOWNS = tuple(d for d in AGENT_BREAKDOWNS if d != "substrate")  # task, layer, access


class ReportInputError(Exception):
    """PATH cannot be reported on; the message is one line for the user."""


def collect(path: Path, plot_limit: int = DEFAULT_PLOT_LIMIT) -> Report:
    if not path.is_dir():
        raise ReportInputError(f"{path.as_posix()}: no such directory (expected a run directory or a campaign "
                               "directory)")
    if is_run_dir(path):
        source, trials = "run", [_run_trial(path)]
        plot_limit = max(plot_limit, 1)
    elif (path / CAMPAIGN_DATABASE).is_file():
        source, trials = "campaign", _campaign_trials(path)
    else:
        raise ReportInputError(f"{path.as_posix()} is neither a run directory (run.json) nor a campaign directory "
                               f"({CAMPAIGN_DATABASE})")
    trials.sort(key=lambda t: (t.agent, t.task, t.variant, t.trial))
    trials = _with_timelines(path, trials, plot_limit)
    stats_trials = [Trial(agent=t.agent, task=t.task, variant=t.variant, faults=t.faults or {UNKNOWN: UNKNOWN},
                          access=t.access, substrate=t.substrate, status=t.status, reward=t.reward,
                          full_fix=t.full_fix) for t in trials]
    most = max(Counter((t.agent, t.variant) for t in trials).values())
    ks = (most,) if most > 1 else ()
    summary = summarize(stats_trials, ks=ks, resamples=RESAMPLES)
    agents = [agent.agent for agent in summary.agents]
    class_counts = _class_counts(trials, agents)
    return Report(source=source, name=path.resolve().name, trials=tuple(trials), summary=summary, ks=ks,
                  class_counts=class_counts, leaderboard=leaderboard(summary, ks),
                  breakdowns=tuple(breakdown_table(summary, d) for d in BREAKDOWNS),
                  class_table=class_table(class_counts, agents),
                  plotted=sum(1 for t in trials if t.timeline is not None), plot_limit=plot_limit)


def _class_counts(trials: list[ReportTrial], agents: list[str]) -> tuple[ClassCount, ...]:
    """Per class (the taxonomy's order, then UNCLASSIFIED) and agent, its scored failures there;
    only the counts that are not 0."""
    counts = Counter((name, t.agent) for t in trials if t.scored_failure for name in t.classes)
    unclassified = Counter(t.agent for t in trials if t.unclassified)
    found = [ClassCount(failure_class=name, agent=agent, count=counts[(name, agent)])
             for name in taxonomy.CLASSES for agent in agents if counts[(name, agent)]]
    found += [ClassCount(failure_class=UNCLASSIFIED, agent=agent, count=unclassified[agent])
              for agent in agents if unclassified[agent]]
    return tuple(found)


# ---- a run directory ----------------------------------------------------------------------------
def _run_trial(run_dir: Path) -> ReportTrial:
    unfinished = incomplete_reason(run_dir)
    if unfinished:
        raise ReportInputError(f"{run_dir.as_posix()}: {unfinished}")
    try:
        record = read_model(run_dir / RUN_RECORD, RunRecord, RUN_RECORD) if (run_dir / RUN_RECORD).exists() else None
        verdict = read_model(run_dir / "verdict.json", Verdict, "verdict.json")
    except EvidenceError as error:
        raise ReportInputError(f"{run_dir.as_posix()}: not a graded run: {error}") from None
    task = verdict.task or (record.task if record else UNKNOWN)
    variant = verdict.variant or (record.variant if record else UNKNOWN)
    agent = record.agent if record else UNKNOWN
    analysis = taxonomy.analyse(run_dir)
    return ReportTrial(
        agent=agent, agent_spec=agent, task=task, variant=variant, trial=1,
        faults=record.faults if record and record.faults is not None else _faults(run_dir),
        access=record.access if record and record.access else UNKNOWN,
        substrate=record.substrate if record and record.substrate else _substrate(run_dir),
        status=verdict.status, reward=verdict.reward,
        outcome=verdict.outcome, safe_repair=verdict.safe_repair, reason=verdict.reason,
        wall_s=record.wall_s if record else None, attempts=1, run_dir=".", checks=_verdict_checks(verdict),
        classes=analysis.classes, full_fix=analysis.full_fix, taxonomy_problem=analysis.problem)


def _faults(run_dir: Path) -> dict[str, str]:
    """A run directory written before run.json recorded its faults: those of its onsets
    (events.jsonl), with the layer where the event names it."""
    found: dict[str, str] = {}
    try:
        lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "onset" and isinstance(event.get("fault"), str):
            layer = event.get("layer")
            found[event["fault"]] = layer if isinstance(layer, str) else found.get(event["fault"], UNKNOWN)
    return dict(sorted(found.items()))


def _substrate(run_dir: Path) -> str:
    try:
        return read_model(run_dir / "evidence" / "baseline.json", Baseline, "baseline.json").substrate
    except EvidenceError:
        return UNKNOWN


# ---- a campaign directory ----------------------------------------------------------------------
def _campaign_trials(directory: Path) -> list[ReportTrial]:
    try:
        store = CampaignStore.open(directory)
    except StoreError as error:
        raise ReportInputError(f"cannot read the campaign's results: {error}") from None
    try:
        rows = store.rows()
    finally:
        store.close()
    if not rows:
        raise ReportInputError(f"{directory.as_posix()}: the campaign has recorded no trial yet")
    return [_campaign_trial(directory, row) for row in rows]


def _campaign_trial(directory: Path, row: TrialRow) -> ReportTrial:
    run_dir = directory / row.run_dir
    checks = tuple(ReportCheck(gate=c.gate, text=c.text, passed=c.passed, detail=c.detail) for c in row.checks)
    try:
        verdict = read_model(run_dir / "verdict.json", Verdict, "verdict.json")
        checks = _verdict_checks(verdict)
    except EvidenceError:
        pass  # the row's own checks (the run directory was moved or lost)
    return ReportTrial(
        agent=row.agent, agent_spec=row.agent_spec, task=row.task, variant=row.variant, trial=row.trial,
        faults=dict(row.faults), access=row.access, substrate=row.substrate, status=row.status, reward=row.reward,
        outcome=row.outcome, safe_repair=row.safe_repair, reason=row.reason, wall_s=row.wall_s,
        attempts=row.attempts, run_dir=row.run_dir, checks=checks, classes=row.failure_classes,
        full_fix=row.full_fix, taxonomy_problem=row.taxonomy_problem)


# ---- shared -------------------------------------------------------------------------------------
def _verdict_checks(verdict: Verdict) -> tuple[ReportCheck, ...]:
    if verdict.gates is None:
        return ()
    found: list[ReportCheck] = []

    def add(gate: Literal["outcome", "safety"], checks: tuple[Check, ...], depth: int) -> None:
        for check in checks:
            found.append(ReportCheck(gate=gate, text=check.text, passed=check.passed, detail=check.detail,
                                     window=str(check.window) if check.window is not None else None, depth=depth))
            add(gate, check.checks, depth + 1)

    add("outcome", verdict.gates.outcome.checks, 0)
    add("safety", verdict.gates.safety.checks, 0)
    return tuple(found)


def _plot_order(trials: list[ReportTrial]) -> list[int]:
    """Indices of `trials` (in report order) in the order they are plotted (the module's contract)."""
    def passed(trial: ReportTrial) -> bool:
        return trial.reward == 1 and trial.status == "scored"

    turn: dict[tuple[str, bool], int] = Counter()
    keys = []
    for index, trial in enumerate(trials):
        group = (trial.agent, passed(trial))
        keys.append((passed(trial), turn[group], index))
        turn[group] += 1
    return [index for *_, index in sorted(keys)]


def _with_timelines(directory: Path, trials: list[ReportTrial], limit: int) -> list[ReportTrial]:
    chosen = set(_plot_order(trials)[:limit])
    done = []
    for index, trial in enumerate(trials):
        if index not in chosen:
            done.append(trial.model_copy(update={"note": f"not plotted: the report plots {limit} trial(s), those "
                                                         "that did not pass first (--plots)"}))
            continue
        try:
            timeline = read_timeline(directory / trial.run_dir)
        except TimelineUnreadable as error:
            done.append(trial.model_copy(update={"note": f"no timeline: {error}"}))
            continue
        done.append(trial.model_copy(update={"timeline": timeline}))
    return done
