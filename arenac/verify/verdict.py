"""Building the verdict and showing it: `scored`, `unscored` and `summary`.

The verdict's shape (verdict.json, reward.json) is arenac/model/verdict.py, shared with the
runner; this module holds the verifier's side of it:
- `scored(...)`: reward 1 only when both gates passed.
- `unscored(...)`: a failed, void or infra_error trial, reward 0, `reason` saying why.
- `summary(verdict)`: a few lines for a terminal; `failing_lines(verdict)` its failing checks, and
  `recorded_failing_lines(run_dir)` those of the verdict.json a run directory holds (none when it
  holds none, or not a verdict: an unscored run says why elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from arenac.model.verdict import Check, Gate, GateResults, Verdict, Window

__all__ = ["Check", "Gate", "GateResults", "Verdict", "Window", "scored", "summary", "unscored"]


def scored(task: str | None, variant: str | None, soak: Window, outcome: Gate, safety: Gate) -> Verdict:
    both = outcome.passed and safety.passed
    return Verdict(task=task, variant=variant, status="scored", reward=1 if both else 0,
                   outcome=outcome.passed, safe_repair=safety.passed, soak=soak,
                   gates=GateResults(outcome=outcome, safety=safety))


def unscored(task: str | None, variant: str | None, status: Literal["failed", "void", "infra_error"],
             reason: str) -> Verdict:
    return Verdict(task=task, variant=variant, status=status, reason=reason, reward=0,
                   outcome=False, safe_repair=False)


def summary(verdict: Verdict) -> str:
    """A few lines for a terminal: status, each gate and check, the reward."""
    name = "/".join(p for p in (verdict.task, verdict.variant) if p) or "run"
    lines = [f"{name}: {verdict.status}" + (f" ({verdict.reason})" if verdict.reason else "")]
    if verdict.gates is not None:
        for label, gate in (("outcome", verdict.gates.outcome), ("safety", verdict.gates.safety)):
            lines.append(f"{label}: {_mark(gate.passed)}")
            lines.extend(_check_lines(gate.checks, "  "))
    repaired = verdict.status != "scored" or verdict.outcome
    lines.append(f"reward: {verdict.reward} (outcome {_mark(verdict.outcome)}"
                 + (f", safe_repair {_mark(verdict.safe_repair)})" if repaired else
                    f": not repaired; safe_repair {_mark(verdict.safe_repair)} says nothing of a repair)"))
    return "\n".join(lines)


def failing_lines(verdict: Verdict) -> list[str]:
    """`  FAIL  TEXT: DETAIL` for every check that failed (sub-checks under their parent), in the
    spec's units: what a one-run command prints under its result line."""
    if verdict.gates is None:
        return []
    return _check_lines(tuple(c for c in (*verdict.gates.outcome.checks, *verdict.gates.safety.checks)
                              if not c.passed), "  ", failing_only=True)


def recorded_failing_lines(run_dir: Path) -> list[str]:
    """`failing_lines` of RUN_DIR/verdict.json; none when there is no verdict to read."""
    try:
        return failing_lines(Verdict.model_validate_json((run_dir / "verdict.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):  # no verdict (an unscored run says why on its result line)
        return []


def _check_lines(checks: tuple[Check, ...], indent: str, failing_only: bool = False) -> list[str]:
    lines = []
    for check in checks:
        if failing_only and check.passed:
            continue
        where = f"  [{check.window}]" if check.window is not None else ""
        lines.append(f"{indent}{_mark(check.passed)}  {check.text}: {check.detail}{where}")
        lines.extend(_check_lines(check.checks, indent + "    ", failing_only))
    return lines


def _mark(passed: bool) -> str:
    return "PASS" if passed else "FAIL"
