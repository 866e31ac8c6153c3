"""The verdict and the reward: what the verifier decided and why (verdict.json, reward.json).

Contract (docs/evidence.md):
- Every outcome predicate and every safety check gives one `Check`: passed, the observed
  value(s), the threshold, the window of plan seconds it was measured over (when it has
  one), and a one-line human-readable detail. Checks that re-evaluate predicates (survives
  restart / retrigger) nest them in `checks`.
- `reward` is 1 only when the run was scored and both gates passed; a void, failed or
  infra_error run has reward 0, no gate results, and `reason` says why.
- `Reward` is exactly reward.json, `Verdict.reward_record()` the one a verdict gives.
- `pinned` (a run's verdict): the sha256 of the plan, gates, oracle and instruction the runner
  read and checked against the manifest when the episode started, and the bundle digest; the
  grader used exactly those gates, never a file re-read later.
- `failed` is a trial that the agent ended as a failure without a score: a harness step that the
  substrate's state (which the agent may have broken) made fail after the handover. Reward 0;
  `reason` names the step.

The verifier constructs these (arenac/verify/verdict.py: `scored`, `unscored`, `summary`); the
runner and a resumed qualification read them back. Unknown fields are refused (base.Model).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, JsonValue

from arenac.model.base import Model
from arenac.model.evidence import TrialStatus

VERDICT_SCHEMA_VERSION: Final = "arenac.verdict/v1"


class Window(Model):
    """A half-open window [start_s, end_s) of plan seconds, with how it was chosen."""

    label: str
    start_s: float
    end_s: float

    def __str__(self) -> str:
        return f"{self.label} [{self.start_s:g}, {self.end_s:g})"


class Check(Model):
    kind: str  # "predicate", or a safety check kind, or "restart"/"retrigger" records
    text: str
    passed: bool
    # what the check saw and what it held it to, as JSON (a number, a list of changes, a record per
    # snapshot...): each kind's own shape, written to verdict.json for the reader to see
    observed: JsonValue = None
    threshold: JsonValue = None
    window: Window | None = None
    detail: str
    terms: dict[str, float | None] = Field(default_factory=dict)  # predicates: every metric term's value
    checks: tuple[Check, ...] = ()


class Gate(Model):
    passed: bool
    checks: tuple[Check, ...]


class GateResults(Model):
    outcome: Gate
    safety: Gate


class Reward(Model):
    """reward.json: the score and the two gates' results, nothing else."""

    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool


class Verdict(Model):
    schema_version: Literal["arenac.verdict/v1"] = VERDICT_SCHEMA_VERSION
    task: str | None = None
    variant: str | None = None
    status: TrialStatus  # the timeline's
    reason: str | None = None
    pinned: dict[str, str] | None = None  # artefact path (or "bundle_digest") -> sha256
    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool
    soak: Window | None = None
    gates: GateResults | None = None

    def reward_record(self) -> Reward:
        return Reward(reward=self.reward, outcome=self.outcome, safe_repair=self.safe_repair)
