"""Whether a fault's injected state is still in place: the fault's mechanism, as the snapshots hold it.

Contract: `in_place(injected, start, end)` is True when every snapshot item that the held targets
of `injected` cover (`Target.covers`, an absent item included) is at `end` as it was at `start`,
a config key compared on its run-time value (an edit only in the ConfigMap leaves the fault
running). `start` is the agent_start snapshot (after the injection, before the agent), `end` the
one judged (soak_end). A fault with no held injected target (`model.actions.held`: a held lock, a
killed session) cannot be judged here; callers say so rather than call this with none. Both the
safety check `fault removed(F)` (verify/safety.py) and the failure class `residual-cause`
(campaign/repair_state.py) read it.
"""

from __future__ import annotations

from arenac.model.actions import Target, held
from arenac.model.evidence import Snapshot
from arenac.verify.scope import ABSENT, Held, Item, differs, snapshot_items


def in_place(injected: tuple[Target, ...], start: Snapshot, end: Snapshot) -> bool:
    """Every held injected target's items are at END as they were at START (the contract)."""
    targets = held(injected)
    if not targets:
        raise ValueError("no injected target the snapshots hold: whether it is in place cannot be said")
    before, after = snapshot_items(start), snapshot_items(end)
    return all(not _changed(target, before, after) for target in targets)


def _changed(target: Target, before: dict[tuple[str, str], Item], after: dict[tuple[str, str], Item]) -> bool:
    keys = {key for key in (*before, *after) if target.covers(Target(kind=key[0], ref=key[1]))}
    keys.add((target.kind, target.ref))
    return any(differs(_running(before.get(key, ABSENT)), _running(after.get(key, ABSENT))) for key in keys)


def _running(value: Held) -> Held:
    """A config key's run-time value when the snapshot pairs it with its ConfigMap's."""
    if isinstance(value, dict) and "run-time" in value:
        running: Item = value["run-time"]
        return running
    return value
