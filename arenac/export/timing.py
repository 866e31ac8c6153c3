"""The exported task's timeouts, from the plan's timeline and the time scale (real seconds).

Contract (docs/harbor.md, "Timeouts"): every number is whole seconds, rounded up.
- `agent_timeout_s`: the plan's agent window x time scale (the harness freezes the agent at the
  same moment; Harbor's timeout is the same bound seen from outside).
- `handover_budget_s`: how long the harness may take to become healthy (`harness status
  --handed-over`): provisioning the substrate (PROVISION_S, real), then warm-up, the latest onset
  before the handover and its manifestation bound (x time scale), plus HANDOVER_MARGIN_S.
- `finish_budget_s`: how long `harness finish` may take after the agent phase: waiting for the
  next load-cycle boundary, the soak, and each kind of challenge (a restart: CHALLENGE_SETTLE_S,
  then up to a cycle until the next cycle boundary, then one cycle; a retrigger: CHALLENGE_SETTLE_S
  and one cycle), x time scale, plus FINISH_MARGIN_S for the grading and
  the copy of the evidence. The collect hook's own timeout is that plus COLLECT_GRACE_S, so that
  `finish` can record its own timeout before Harbor gives up on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from arenac.model.plan import Plan

PROVISION_S = 120.0  # real seconds: embedded PostgreSQL, Redis and the services start cold in a container
HANDOVER_MARGIN_S = 60.0
CHALLENGE_SETTLE_S = 5.0  # plan seconds; the runner lets a restarted service settle 2 s before its cycle
FINISH_MARGIN_S = 120.0
COLLECT_GRACE_S = 60.0
VERIFIER_TIMEOUT_S = 120  # the verifier only transcribes the harness's verdict
HEALTHCHECK_INTERVAL_S = 5
HEALTHCHECK_TIMEOUT_S = 10
HEALTHCHECK_RETRIES = 3


@dataclass(frozen=True)
class Budgets:
    agent_timeout_s: int
    handover_budget_s: int
    finish_budget_s: int
    collect_timeout_s: int
    verifier_timeout_s: int


def budgets(plan: Plan, time_scale: float) -> Budgets:
    timeline = plan.timeline
    before_handover = max((fault.onset.latest_start_s + fault.manifest_within_s for fault in plan.faults
                           if not fault.decoy and fault.onset.kind != "in_window"), default=0.0)
    handover = PROVISION_S + (timeline.warmup_s + before_handover) * time_scale + HANDOVER_MARGIN_S
    challenges = 0.0
    if plan.challenges.restart:  # the re-check waits for the next cycle boundary after the settle: 2 cycles at most
        challenges += 2 * timeline.cycle_s + CHALLENGE_SETTLE_S
    if plan.challenges.retrigger:
        challenges += timeline.cycle_s + CHALLENGE_SETTLE_S
    after_agent = timeline.cycle_s + timeline.soak_s + challenges
    finish = math.ceil(after_agent * time_scale + FINISH_MARGIN_S)
    return Budgets(
        agent_timeout_s=math.ceil(timeline.agent_window_s * time_scale),
        handover_budget_s=math.ceil(handover),
        finish_budget_s=finish,
        collect_timeout_s=finish + math.ceil(COLLECT_GRACE_S),
        verifier_timeout_s=VERIFIER_TIMEOUT_S,
    )
