"""The trials of `arenac campaign`, once its input was checked (arenac/cli/campaign.py): open the
bundles, open the results store, run with a progress display, print the summary table.

Contract: returns 0 when every trial has a result, 1 when the campaign was stopped with trials
left (rerun to resume), 3 when the runner refused to start (a tampered bundle, a sandbox that
cannot be had) or the results database cannot be used. Imported only by `arenac campaign`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from arenac.campaign.progress import CampaignProgress
from arenac.campaign.run import plan_trials, run_campaign
from arenac.campaign.stats import summarize
from arenac.campaign.store import CampaignStore, StoreError, as_trial
from arenac.model.campaign import CLASSES, CampaignRecord, CampaignSpec, TrialRow
from arenac.runner.launch import Launcher, RunRefused, prepare, warn_capacity
from arenac.runner.options import ClusterTarget, Isolation
from arenac.runner.records import write_model

EXIT_OK, EXIT_LEFT, EXIT_REFUSED = 0, 1, 3


def campaign_command(spec: CampaignSpec, bundle_dirs: list[str], out: Path, isolation: Isolation,
                     cluster: ClusterTarget | None = None) -> int:
    try:
        bundles, stop = prepare(bundle_dirs, isolation, cluster=cluster)
        out.mkdir(parents=True, exist_ok=True)
        store = CampaignStore.open(out)
    except (RunRefused, StoreError) as error:
        print(f"arenac: refusing to run: {error}", file=sys.stderr)
        return EXIT_REFUSED
    write_model(out / "campaign.json", CampaignRecord(
        agents=spec.agents, variants=tuple(b.plan.variant for b in bundles), k=spec.k, time_scale=spec.time_scale,
        retries=spec.retries, backend=spec.backend))
    warn_capacity(spec.jobs, out, cluster, bundles)
    trials = plan_trials(spec.agents, bundles, spec.k)
    print(f"campaign: {len(spec.agents)} agent(s) x {len(bundles)} variant(s) x k={spec.k} = {len(trials)} trials, "
          f"{spec.jobs} side by side, time scale {spec.time_scale:g} -> {out.as_posix()}", flush=True)
    try:
        with CampaignProgress(len(trials), spec.jobs, sys.stdout) as progress:
            outcome = run_campaign(trials, out, store, spec.time_scale, spec.jobs, spec.retries, stop, Launcher(),
                                   isolation, cluster, on_start=progress.start, on_done=progress.done)
        rows = store.rows()
    finally:
        store.close()
    print(f"campaign: {outcome.ran} trial(s) run, {outcome.reused} reused, {outcome.left} left"
          + (" (rerun to resume)" if outcome.left else ""))
    for line in summary_lines(rows):
        print(line)
    return EXIT_OK if outcome.complete else EXIT_LEFT


def summary_lines(rows: Sequence[TrialRow]) -> list[str]:
    """The leaderboard: per agent, its scored trials, passes, pass@1 with its task-bootstrap 95%
    interval, the trials excluded (void, infra_error), its scored trials that made a full fix and
    the pass rate among them; then, when a scored trial failed, how many of each agent's failures
    fall in each failure class that occurs (a failure may be in several), and how many could not
    be classified."""
    if not rows:
        return []
    summary = summarize([as_trial(row) for row in rows], resamples=2000)
    table: list[tuple[str, ...]] = [("agent", "scored", "passed", "pass@1", "95% CI (tasks)", "void",
                                      "infra_error", "full fix", "pass given full fix")]
    for agent in summary.agents:
        pooled = next(g for g in summary.leaderboard.groups if g.key == agent.agent)
        fixed = next(g for g in summary.given_full_fix.groups if g.key == agent.agent)
        estimate = agent.pass_at_1
        table.append((agent.agent, str(pooled.scored), str(pooled.passes), _percent(estimate.value),
                      (f"{estimate.interval.low:.0%}-{estimate.interval.high:.0%}"
                       if estimate.interval is not None else "-"),
                      str(pooled.excluded.void), str(pooled.excluded.infra_error), str(fixed.scored),
                      _percent(fixed.pass_rate)))
    return _columns(table) + _class_lines(rows)


def _class_lines(rows: Sequence[TrialRow]) -> list[str]:
    occurring = [name for name in CLASSES if any(name in row.failure_classes for row in rows)]
    unread = any(row.taxonomy_problem for row in rows)
    if not occurring and not unread:
        return []
    table: list[tuple[str, ...]] = [("agent", *occurring, *(("not classified",) if unread else ()))]
    for agent in sorted({row.agent for row in rows}):
        mine = [row for row in rows if row.agent == agent]
        counts = [sum(name in row.failure_classes for row in mine) for name in occurring]
        if unread:
            counts.append(sum(1 for row in mine if row.taxonomy_problem))
        table.append((agent, *map(str, counts)))
    return ["failure classes (a failure may be in several):", *_columns(table)]


def _percent(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "-"


def _columns(table: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in table]
