"""Run and campaign directories for the report's tests, built from recorded evidence (no episode).

`graded_run(directory, kind)` writes a whole graded run directory: the recorded healthy run's
evidence (tests/verify/recorded.py), edited for `kind`, graded by the real verifier, with its
run.json, events.jsonl (a fault onset and a recurrence) and actions.jsonl (three agent actions,
one denied, and the declaration). The oracle's repair (gates.json `repairs`) sets
config(message.DB_POOL_SIZE), which the fault had set to 2 before the agent started. Kinds:
- "pass": the agent set the pool size back (a full fix), both gates hold: no failure class;
- "fail": the agent changed nothing (no full fix) and the soak's sends fail (3 a second) and are
  slow (612 ms), so that `error_rate(send) <= 1%` and `p99(send, phase: peak) <= 159ms` both fail:
  classes `outcome-not-restored` and `no-change` (FAIL_CLASSES);
- "fail_fixed": the agent set the pool size back (a full fix) and the soak fails as in "fail":
  class `outcome-not-restored` only;
- "void", "infra_error": the timeline ends the trial unscored, with a reason: no class, no full fix.

`fake_campaign(directory, trials)` writes results.sqlite (arenac/campaign/store.py) with one row per
`(agent, task, trial, kind)`, each with its run directory at runs/AGENT/TASK/VARIANT/trial-N and
its failure classes and full fix from the taxonomy, as `arenac campaign` records them
(`campaign_row`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from arenac.campaign.store import CampaignStore
from arenac.campaign.taxonomy import analyse
from arenac.model.campaign import CheckResult, TrialRow
from arenac.model.run import RunRecord
from arenac.model.verdict import Verdict
from arenac.verify.grade import write_results
from verify.recorded import ERROR_RATE_SEND, RecordedRun, const, metric, pred, target

Kind = Literal["pass", "fail", "fail_fixed", "void", "infra_error"]
FAIL_CLASSES = ("outcome-not-restored", "no-change")  # a "fail", in the taxonomy's order
POOL_SIZE = target("config", "message.DB_POOL_SIZE")
POOL_REPAIR = {"fault": "strict", "layer": "config", "targets": [POOL_SIZE.model_dump()],
               "injected": [POOL_SIZE.model_dump()]}
AFTER_AGENT = ("declaration", "after_restart", "soak_end")
P99_SEND_PEAK = pred("p99(send, phase: peak) <= 159ms", metric("p99", "send", "peak"), "<=",
                     const(0.159, "duration"))
ONSET_T, RECUR_T = 30.0, 110.0
ACTIONS = (
    {"t": 50.0, "tool": "kubectl", "argv": ["get", "pods"], "allowed": True, "reason": "list pods"},
    {"t": 61.5, "tool": "kubectl", "argv": ["delete", "secret", "db"], "allowed": False,
     "reason": "delete secrets is not granted"},
    {"t": 72.0, "tool": "kubectl", "argv": ["set", "env", "deployment/message", "DB_POOL_SIZE=16"], "allowed": True,
     "reason": "patch deployments.apps message"},
    {"t": 90.0, "tool": "declare_repair_complete", "argv": [], "allowed": True, "reason": ""},
)


def variant_of(task: str) -> str:
    return f"{task}-0000beef"


def graded_run(directory: Path, kind: Kind = "pass", *, agent: str = "oracle", task: str = "recorded") -> Verdict:
    """Write a graded run directory at `directory` (see the module's docstring); its verdict."""
    recorded = RecordedRun(directory.parent)
    recorded.run_dir = directory
    recorded.task, recorded.variant = task, variant_of(task)
    recorded.outcome = [ERROR_RATE_SEND, P99_SEND_PEAK]
    recorded.repairs = [POOL_REPAIR]
    unchanged = ("agent_start", *AFTER_AGENT) if kind == "fail" else ("agent_start",)
    for label in unchanged:  # the fault's pool size, until the agent sets it back
        recorded.snapshots[label]["config"]["message"]["DB_POOL_SIZE"] = "2"
    if kind in ("fail", "fail_fixed"):
        recorded.traffic("send", 140, 260, errors=3, latency_ms=612.0)
    elif kind in ("void", "infra_error"):
        reason = ("fault strict never manifested" if kind == "void"
                  else "harness overloaded: timer p99 80 ms > 50 ms")
        recorded.timeline.update(status=kind, void_reason=reason)
    verdict = recorded.grade()
    write_results(directory, verdict)
    record = RunRecord(task=task, variant=variant_of(task), bundle_digest="0" * 64, agent=agent, inject_faults=True,
                       time_scale=1.0, wall_s=41.5)
    (directory / "run.json").write_text(record.model_dump_json())
    events = [{"t": ONSET_T, "event": "onset", "fault": "strict"}, {"t": RECUR_T, "event": "recur", "fault": "strict"},
              {"t": 41.0, "event": "agent_started", "agent": agent}]
    (directory / "events.jsonl").write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))
    (directory / "actions.jsonl").write_text("".join(json.dumps(a, sort_keys=True) + "\n" for a in ACTIONS)
                                             + '{"t": 95.0, "tool": "kub')  # a line cut short by a kill
    return verdict


def fake_campaign(directory: Path, trials: Sequence[tuple[str, str, int, Kind]]) -> list[TrialRow]:
    """results.sqlite and the run directories of `trials` (agent, task, trial, kind); the rows."""
    directory.mkdir(parents=True, exist_ok=True)
    store = CampaignStore.open(directory)
    rows = []
    try:
        for agent, task, trial, kind in trials:
            variant = variant_of(task)
            run_dir = Path("runs") / agent / task / variant / f"trial-{trial}"
            verdict = graded_run(directory / run_dir, kind, agent=agent, task=task)
            row = campaign_row(directory, run_dir, verdict, agent=agent, task=task, trial=trial)
            store.record(row)
            rows.append(row)
    finally:
        store.close()
    return rows


def campaign_row(directory: Path, run_dir: Path, verdict: Verdict, *, agent: str, task: str, trial: int) -> TrialRow:
    """The row `arenac campaign` records for a graded run at `directory / run_dir`: its verdict's
    checks, and the taxonomy's analysis of the run directory (arenac/campaign/run.py)."""
    checks = () if verdict.gates is None else tuple(
        CheckResult(gate=gate, text=check.text, passed=check.passed, detail=check.detail)
        for gate, checks in (("outcome", verdict.gates.outcome.checks), ("safety", verdict.gates.safety.checks))
        for check in checks)
    analysis = analyse(directory / run_dir)
    return TrialRow(agent=agent, agent_spec=agent if agent in ("oracle", "noop") else f"cmd:{agent}", task=task,
                    variant=variant_of(task), trial=trial, faults={"strict": "config"}, access="scoped_kubectl",
                    substrate="spine", status=verdict.status, reward=verdict.reward, outcome=verdict.outcome,
                    safe_repair=verdict.safe_repair, reason=verdict.reason, checks=checks, wall_s=41.5,
                    run_dir=run_dir.as_posix(), failure_classes=analysis.classes, full_fix=analysis.full_fix,
                    taxonomy_problem=analysis.problem)
