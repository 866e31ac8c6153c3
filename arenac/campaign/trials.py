"""One trial's result as the campaign statistics read it (arenac/campaign/stats.py).

Contract:
- A `Trial` is one episode of one agent on one variant: its task, variant id, faults (fault name ->
  layer: config | runtime | image), access profile, substrate, status and reward. It is frozen and
  refuses unknown fields (base.Model), like every model that crosses a boundary.
- `status` is the timeline's (model/evidence.py `TrialStatus`): `scored` and `failed` trials are
  *scored* (a `failed` trial is one where a harness step failed after the handover, which the agent
  may have caused: a scored failure, reward 0, docs/evidence.md); `void` and `infra_error` trials
  are *excluded*: the statistics never count them as passes or failures, and count them apart.
- The reward is 0 or 1, and 1 only for a `scored` trial: the verifier gives every other status
  reward 0 (verify/verdict.py `unscored`), so a row that says otherwise is refused, not guessed at.
- `full_fix` (campaign/taxonomy.py): whether the agent changed every target of the oracle's repair
  the snapshots hold; None when that cannot be said. "Pass rate given a full fix" counts the scored
  trials where it is True.
- A trial has at least one fault: every variant injects one, and the per-layer breakdown counts a
  trial in each distinct layer of its faults.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from arenac.model.base import Model
from arenac.model.evidence import TrialStatus

SCORED_STATUSES: frozenset[TrialStatus] = frozenset({"scored", "failed"})
ExcludedStatus = Literal["void", "infra_error"]


class Trial(Model):
    """One trial's result: who ran what, under which coordinates, and how it ended."""

    agent: str
    task: str
    variant: str  # the bundle's content-hashed variant id
    faults: dict[str, str] = Field(min_length=1)  # fault name -> its layer in this variant
    access: str  # the access profile
    substrate: str
    status: TrialStatus
    reward: Literal[0, 1]
    full_fix: bool | None = None  # the agent changed every target of the oracle's repair (None: not said)

    @model_validator(mode="after")
    def _reward_only_when_scored(self) -> Trial:
        if self.reward == 1 and self.status != "scored":
            raise ValueError(f"a {self.status} trial has reward 0 (the verifier's), not 1")
        return self

    @property
    def scored(self) -> bool:
        """Whether the trial counts in the figures (scored or failed), rather than being excluded."""
        return self.status in SCORED_STATUSES

    @property
    def passed(self) -> bool:
        return self.reward == 1

    @property
    def layers(self) -> tuple[str, ...]:
        """The distinct layers of the trial's faults, sorted: the per-layer groups it counts in."""
        return tuple(sorted(set(self.faults.values())))
