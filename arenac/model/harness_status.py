"""`status.json` of `arenac harness episode`: where its one episode is, for `arenac harness status`
(a compose healthcheck) and `arenac harness finish` (Harbor's collect hook) to read.

Written atomically (a reader sees the old file or the new, never half of one) by the episode's
process into its `--run-dir`, beside the run directory `run/`:

- `phase`: provisioning (substrate, load, warm-up, onsets, manifestation) -> handed_over (the
  agent's doors are open) -> agent_done (its window closed: soak, challenges, grading under way)
  -> graded (verdict.json and reward.json written); `ended` once the process stops (SIGTERM after
  the grade, or an episode that could not run: `reason` says why), keeping what was known.
- `handed_over`: whether the agent ever got its doors (False for a trial void or failed before).
- `trial_status`, `reward`, `reason`: the trial's, once graded (reason: why it is not scored).
- `pid`: the episode's process, so that a reader can tell a dead one from a slow one.
"""

from __future__ import annotations

from typing import Literal

from arenac.model.base import Model
from arenac.model.evidence import TrialStatus

HarnessPhase = Literal["provisioning", "handed_over", "agent_done", "graded", "ended"]


class HarnessStatus(Model):
    phase: HarnessPhase
    pid: int
    handed_over: bool = False
    trial_status: TrialStatus | None = None
    reward: int | None = None
    reason: str | None = None

    @property
    def has_result(self) -> bool:
        """The episode was graded: its run directory holds verdict.json and reward.json."""
        return self.trial_status is not None
