"""What the state snapshots say of the oracle's repair: whether the fault's mechanism is still there
at soak end (residual cause), and whether the agent changed every target the oracle's repair
changes (full fix). docs/campaign.md, "Failure classes".

Contract (both read only the evidence directory: gates.json's `repairs`, the faults the oracle
repairs with the targets their injection and their repair change, written by the compiler; and
the snapshots):
- A target is *held* by the snapshots when its kind is one they record (model/actions.py
  `HELD_KINDS`: config, event, release, db_setting, grant, role, membership, redis, sequence); a
  `session` (a killed connection) or `table` target leaves no item a snapshot holds, and is not
  judged.
- `mechanism_present(evidence)`: the repaired faults whose injection is still in place at soak
  end: a fault with at least one held injected target, every one of whose items is at soak_end as
  it was at agent_start (verify/mechanism.py `in_place`, which the safety check `fault removed`
  shares). A fault with no held injected target (a held lock) is never said to be present, nor is
  any in a run without an agent_start snapshot (older runs: no state after the injection to
  compare with).
- `full_fix(evidence)`: True when every held target of the oracle's repair *covers* one of the
  agent's changes, False when one does not, None when it cannot be said: the gates hold no
  `repairs` (a bundle compiled before them), or the oracle's repair changes no held target. The
  agent's changes are those the scope check attributes to it (verify/scope.py `agent_changes`:
  snapshot items that differ from agent_start at the declaration or at soak end, less what the
  harness itself changed and left): "covers" means the agent changed that target, whatever value
  it set. The action log (actions.jsonl) is not read: its argv is free text (`kubectl edit`, SQL,
  `redis-cli` through exec) that cannot be mapped to targets faithfully, whereas every brokered
  call that changes state shows in the snapshots the scope check already attributes.
- Unreadable evidence raises `EvidenceError` (the caller says why); nothing here guesses.
"""

from __future__ import annotations

from arenac.model.actions import held
from arenac.model.evidence import OracleRepair
from arenac.verify.evidence import Evidence
from arenac.verify.grade import read_gates
from arenac.verify.mechanism import in_place
from arenac.verify.scope import agent_changes


def oracle_repairs(evidence: Evidence) -> tuple[OracleRepair, ...] | None:
    """gates.json's record of the oracle's repairs; None for a bundle compiled before it."""
    return read_gates(evidence.directory / "gates.json").repairs


def mechanism_present(evidence: Evidence) -> tuple[str, ...]:
    """The repaired faults whose injected state is at soak end as the agent found it (the contract)."""
    repairs = oracle_repairs(evidence)
    if not repairs:
        return ()
    start = evidence.snapshot("agent_start", required=False)
    if start is None:  # a run from before agent_start: no state after the injection to compare with
        return ()
    end = evidence.snapshot("soak_end")
    return tuple(repair.fault for repair in repairs if held(repair.injected) and in_place(repair.injected, start, end))


def full_fix(evidence: Evidence) -> bool | None:
    """Whether the agent changed every held target of the oracle's repair (the contract)."""
    repairs = oracle_repairs(evidence)
    if repairs is None:
        return None
    wanted = [target for repair in repairs for target in held(repair.targets)]
    if not wanted:
        return None
    changed = [target for target, _, _ in agent_changes(evidence)]
    return all(any(target.covers(change) for change in changed) for target in wanted)
