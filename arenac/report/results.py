"""The report's data for people's own analysis: `results.json` (everything the report shows but the
plots' geometry) and `trials.csv` (one row per trial).

Contract:
- `results_document(report)` -> `ResultsDocument`: the schema version, the source, every trial
  (its identity, status, reward, reason, faults, checks in the spec's units, failure classes, full
  fix, why the taxonomy could not read its evidence if it could not, run directory; without its
  timeline, which is the run directory's own evidence), the statistics' summary as
  arenac/campaign/stats.py gives it (leaderboard, per-agent estimates and breakdowns, the excluded
  trials, the pass rate given a full fix), and the per-class counts. Written as canonical JSON
  (sorted keys).
- `trials.csv`: a header then one row per trial, in the report's order, with the columns of
  `CSV_COLUMNS`; lists are joined with "; " (faults as `name:layer`), booleans are `true`/`false`,
  a missing value is empty (`full_fix` when it is not said). The failing checks are the gate's
  own (depth 0), as `text: detail`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Literal

from arenac.campaign.stats import CampaignSummary
from arenac.core.serialize import dump_json, write_atomic
from arenac.model.base import Model
from arenac.model.campaign import FailureClass
from arenac.report.model import SCHEMA_VERSION, ClassCount, Report, ReportCheck, ReportTrial

CSV_COLUMNS = ("agent", "agent_spec", "task", "variant", "trial", "status", "reward", "outcome", "safe_repair",
               "reason", "faults", "layers", "access", "substrate", "attempts", "wall_s", "checks", "checks_failed",
               "failing_checks", "classes", "full_fix", "taxonomy_problem", "run_dir")


class TrialResult(Model):
    agent: str
    agent_spec: str
    task: str
    variant: str
    trial: int
    status: str
    reward: int
    outcome: bool
    safe_repair: bool
    reason: str | None
    faults: dict[str, str]
    access: str
    substrate: str
    attempts: int
    wall_s: float | None
    checks: tuple[ReportCheck, ...]
    classes: tuple[FailureClass, ...]
    full_fix: bool | None
    taxonomy_problem: str | None
    run_dir: str


class ResultsDocument(Model):
    schema_version: Literal["arenac.report/v2"] = SCHEMA_VERSION
    source: str
    name: str
    trials: tuple[TrialResult, ...]
    summary: CampaignSummary
    class_counts: tuple[ClassCount, ...]


def _result(trial: ReportTrial) -> TrialResult:
    return TrialResult(**trial.model_dump(include=set(TrialResult.model_fields)))


def results_document(report: Report) -> ResultsDocument:
    return ResultsDocument(source=report.source, name=report.name, trials=tuple(_result(t) for t in report.trials),
                           summary=report.summary, class_counts=report.class_counts)


def write_results_json(report: Report, path: Path) -> None:
    write_atomic(path, dump_json(results_document(report).model_dump(mode="json")))


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def csv_row(trial: ReportTrial) -> dict[str, str]:
    failing = [c for c in trial.checks if c.depth == 0 and not c.passed]
    values: dict[str, object] = {
        "agent": trial.agent, "agent_spec": trial.agent_spec, "task": trial.task, "variant": trial.variant,
        "trial": trial.trial, "status": trial.status, "reward": trial.reward, "outcome": trial.outcome,
        "safe_repair": trial.safe_repair, "reason": trial.reason,
        "faults": "; ".join(f"{name}:{layer}" for name, layer in trial.faults.items()),
        "layers": "; ".join(trial.layers), "access": trial.access, "substrate": trial.substrate,
        "attempts": trial.attempts, "wall_s": trial.wall_s,
        "checks": sum(1 for c in trial.checks if c.depth == 0), "checks_failed": len(failing),
        "failing_checks": "; ".join(f"{c.text}: {c.detail}" for c in failing), "classes": "; ".join(trial.classes),
        "full_fix": trial.full_fix, "taxonomy_problem": trial.taxonomy_problem, "run_dir": trial.run_dir}
    return {column: _text(values[column]) for column in CSV_COLUMNS}


def render_csv(report: Report) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_row(trial) for trial in report.trials)
    return buffer.getvalue()


def write_trials_csv(report: Report, path: Path) -> None:
    write_atomic(path, render_csv(report))
