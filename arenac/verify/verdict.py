"""The verdict: what the verifier decided and why, as data (verdict.json) and as text.

Contract:
- Every outcome predicate and every safety check gives one `Check`: passed, the observed
  value(s), the threshold, the window of plan seconds it was measured over (when it has
  one), and a one-line human-readable detail. Checks that re-evaluate predicates (survives
  restart / retrigger) nest them in `checks`.
- `reward` is 1 only when the run was scored and both gates passed; a void or
  infra_error run has reward 0, no gate results, and `reason` says why.
- `reward_data` is exactly reward.json: `{reward, outcome, safe_repair}`.
- `pinned` (a run's verdict): the sha256 of the plan, gates, oracle and instruction the runner
  read and checked against the manifest when the episode started, and the bundle digest; the
  grader used exactly those gates, never a file re-read later.
- `failed` is a trial that the agent ended as a failure without a score: a harness step that the
  substrate's state (which the agent may have broken) made fail after the handover. Reward 0;
  `reason` names the step.
"""

from __future__ import annotations

from typing import Any, Literal

from arenac.model.base import Model

VERDICT_SCHEMA_VERSION = "arenac.verdict/v1"


class Window(Model):
    """A half-open window [start_s, end_s) of plan seconds, with how it was chosen."""

    label: str
    start_s: float
    end_s: float

    def __str__(self) -> str:
        return f"{self.label} [{_num(self.start_s)}, {_num(self.end_s)})"


class Check(Model):
    kind: str  # "predicate", or a safety check kind, or "restart"/"retrigger" records
    text: str
    passed: bool
    observed: Any = None
    threshold: Any = None
    window: Window | None = None
    detail: str
    terms: dict[str, float | None] = {}  # predicates: every metric term's value
    checks: tuple["Check", ...] = ()


class Gate(Model):
    passed: bool
    checks: tuple[Check, ...]


class GateResults(Model):
    outcome: Gate
    safety: Gate


class Verdict(Model):
    schema_version: Literal["arenac.verdict/v1"] = VERDICT_SCHEMA_VERSION
    task: str | None = None
    variant: str | None = None
    status: Literal["scored", "failed", "void", "infra_error"]
    reason: str | None = None
    pinned: dict[str, str] | None = None
    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool
    soak: Window | None = None
    gates: GateResults | None = None

    def reward_data(self) -> dict[str, Any]:
        return {"reward": self.reward, "outcome": self.outcome, "safe_repair": self.safe_repair}


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
    lines.append(f"reward: {verdict.reward} (outcome {_mark(verdict.outcome)}, "
                 f"safe_repair {_mark(verdict.safe_repair)})")
    return "\n".join(lines)


def _check_lines(checks: tuple[Check, ...], indent: str) -> list[str]:
    lines = []
    for check in checks:
        where = f"  [{check.window}]" if check.window is not None else ""
        lines.append(f"{indent}{_mark(check.passed)}  {check.text}: {check.detail}{where}")
        lines.extend(_check_lines(check.checks, indent + "    "))
    return lines


def _mark(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _num(value: float) -> str:
    return f"{value:g}"
