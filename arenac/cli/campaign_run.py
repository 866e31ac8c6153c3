"""The trials of `arenac campaign`, once its input was checked (arenac/cli/campaign.py): open the
bundles, open the results store, run with a progress display, print the summary table.

Contract: returns 0 when every trial has a result, 1 when the campaign was stopped with trials
left (rerun to resume), 3 when the runner refused to start (a tampered bundle, a sandbox that
cannot be had) or the results database cannot be used. Imported only by `arenac campaign`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from arenac.campaign.progress import CampaignProgress
from arenac.campaign.run import plan_trials, run_campaign
from arenac.campaign.stats import summarize
from arenac.campaign.store import CampaignStore, StoreError
from arenac.model.campaign import CampaignRecord, CampaignSpec
from arenac.runner.launch import Launcher, RunRefused, prepare, warn_capacity
from arenac.runner.options import Isolation
from arenac.runner.records import write_model

EXIT_OK, EXIT_LEFT, EXIT_REFUSED = 0, 1, 3


def campaign_command(spec: CampaignSpec, bundle_dirs: list[str], out: Path, isolation: Isolation) -> int:
    try:
        bundles, stop = prepare(bundle_dirs, isolation)
        out.mkdir(parents=True, exist_ok=True)
        store = CampaignStore.open(out)
    except (RunRefused, StoreError) as error:
        print(f"arenac: refusing to run: {error}", file=sys.stderr)
        return EXIT_REFUSED
    write_model(out / "campaign.json", CampaignRecord(
        agents=spec.agents, variants=tuple(b.plan.variant for b in bundles), k=spec.k, time_scale=spec.time_scale,
        retries=spec.retries, backend=spec.backend))
    warn_capacity(spec.jobs, out)
    trials = plan_trials(spec.agents, bundles, spec.k)
    print(f"campaign: {len(spec.agents)} agent(s) x {len(bundles)} variant(s) x k={spec.k} = {len(trials)} trials, "
          f"{spec.jobs} side by side, time scale {spec.time_scale:g} -> {out.as_posix()}", flush=True)
    try:
        with CampaignProgress(len(trials), spec.jobs, sys.stdout) as progress:
            outcome = run_campaign(trials, out, store, spec.time_scale, spec.jobs, spec.retries, stop, Launcher(),
                                   isolation, on_start=progress.start, on_done=progress.done)
        rows = store.trials()
    finally:
        store.close()
    print(f"campaign: {outcome.ran} trial(s) run, {outcome.reused} reused, {outcome.left} left"
          + (" (rerun to resume)" if outcome.left else ""))
    for line in summary_lines(rows):
        print(line)
    return EXIT_OK if outcome.complete else EXIT_LEFT


def summary_lines(trials) -> list[str]:
    """The leaderboard: per agent, its scored trials, passes, pass@1 with its task-bootstrap 95%
    interval, and the trials excluded (void, infra_error)."""
    if not trials:
        return []
    summary = summarize(trials, resamples=2000)
    rows = [("agent", "scored", "passed", "pass@1", "95% CI (tasks)", "void", "infra_error")]
    for agent in summary.agents:
        pooled = next(g for g in summary.leaderboard.groups if g.key == agent.agent)
        estimate = agent.pass_at_1
        value = f"{estimate.value:.0%}" if estimate.value is not None else "-"
        interval = (f"{estimate.interval.low:.0%}-{estimate.interval.high:.0%}"
                    if estimate.interval is not None else "-")
        rows.append((agent.agent, str(pooled.scored), str(pooled.passes), value, interval,
                     str(pooled.excluded.void), str(pooled.excluded.infra_error)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
