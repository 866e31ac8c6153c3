"""Acknowledged writes: none may be lost unseen (docs/evidence.md, `acks.jsonl`, `acked_soak_end.json`).

Contract:
- The acknowledged writes are the lines of evidence/acks.jsonl (the load generator; required) and
  evidence/harness_acks.jsonl (the harness's send bursts; absent = none). A write is *judged* when
  its answer arrived before the soak-end record was taken (`t` at least `MARGIN_REAL_S` real seconds,
  in plan seconds, before the record's `t`); later ones are counted, not judged.
- `protect table(T)` (with the baseline checksum, arenac/verify/safety.py): every judged
  acknowledged write to T with an id above the record's `after_id` exists at soak end with the digest
  of what was sent (`missing`: no such row; `altered`: another digest). Writes at or below `after_id`
  existed at the baseline and are covered by its checksum. Sequence counters are in neither digest,
  so a permitted renumbering passes. No acknowledged write to T: nothing more to judge.
- `protect queue(fanout)`: every acknowledged send answered at least `IN_FLIGHT_REAL_S` real seconds
  before the record (younger events may be between the queue and the inboxes) has its fan-out event
  still queued (parked in
  PostgreSQL or in the Redis queue) or delivered (its id in the inbox of every member of its channel
  but its author; an inbox at its cap excuses an event whose seq is at or below the inbox's floor,
  as spine trims the oldest entries). Otherwise it was dropped, and the check fails.
- The record (or a part of it) that the check needs and the runner did not write is its omission
  (EvidenceError); a part recorded as {"error": ...} (the substrate refused to be read at soak end)
  fails the check: what cannot be seen cannot be shown intact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pydantic import ValidationError

from arenac.loadgen.acks import read_acks
from arenac.model.evidence import AckedSoakEnd, AckedWrite, FanoutAtSoakEnd, MessagesAtSoakEnd, PartUnreadable
from arenac.model.gates import ProtectQueue
from arenac.model.verdict import Check
from arenac.verify.evidence import Evidence, EvidenceError, read_model

MARGIN_REAL_S = 0.1  # the load generator's and the runner's clocks agree to well within this
# fan-out is asynchronous: an event accepted in the last seconds before the record may be between
# the queue and the inboxes (a busy machine, episodes side by side, trail by seconds). The agent is
# frozen long before, so excusing these cannot hide an agent's drop; they are counted, not judged.
IN_FLIGHT_REAL_S = 5.0
SHOWN = 10  # ids listed in a detail


@dataclass
class AckedWrites:
    """The acknowledged writes of a run and the soak-end record, read once."""

    evidence: Evidence

    @cached_property
    def writes(self) -> list[AckedWrite]:
        found = []
        for name, required in (("acks.jsonl", True), ("harness_acks.jsonl", False)):
            path = self.evidence.directory / name
            if not path.exists() and not required:
                continue
            try:
                lines = read_acks(path)
            except FileNotFoundError:
                raise EvidenceError(f"evidence/{name}: missing ({path})") from None
            except (OSError, ValueError) as error:
                raise EvidenceError(f"evidence/{name}: unreadable: {error}") from None
            for line in lines:
                try:
                    found.append(AckedWrite.model_validate(line))
                except ValidationError as error:
                    first = error.errors()[0]
                    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
                    raise EvidenceError(f"evidence/{name}: a line is not an acknowledged write "
                                        f"({where}: {first['msg']}): {line!r}") from None
        return found

    @cached_property
    def record(self) -> AckedSoakEnd:
        return read_model(self.evidence.directory / "acked_soak_end.json", AckedSoakEnd,
                          "evidence/acked_soak_end.json")

    def part(self, name: str) -> MessagesAtSoakEnd | FanoutAtSoakEnd | PartUnreadable:
        part: MessagesAtSoakEnd | FanoutAtSoakEnd | PartUnreadable | None = getattr(self.record, name)
        if part is None:
            raise EvidenceError(f"evidence/acked_soak_end.json: no {name}")
        return part

    def judged(self, table: str, margin_real_s: float = MARGIN_REAL_S) -> tuple[list[AckedWrite], int]:
        """(the writes to `table` judged at the record, how many arrived too late to be: less than
        `margin_real_s` real seconds before it)."""
        writes = [w for w in self.writes if w.table == table]
        if not writes:
            return [], 0
        scale = self.evidence.timeline.time_scale or 1.0
        cutoff = self.record.t - margin_real_s / scale
        judged = [w for w in writes if w.t <= cutoff]
        return judged, len(writes) - len(judged)


def _ids(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in sorted(ids)[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def table_writes_intact(acked: AckedWrites, table: str) -> tuple[bool, dict[str, object], str]:
    """The acknowledged-writes half of `protect table(T)`: (passed, observed, detail); `observed`
    (counts and id lists) becomes part of a Check's, which validates it as JSON."""
    judged, late = acked.judged(table)
    if not judged:
        return True, {"judged": 0, "after_record": late}, f"no acknowledged write to {table} to judge"
    part = acked.part(table)
    if isinstance(part, PartUnreadable):
        return False, {"judged": len(judged), "error": part.error}, \
            f"{len(judged)} acknowledged writes to {table} could not be checked at soak end: {part.error}"
    if not isinstance(part, MessagesAtSoakEnd):  # pragma: no cover (the record's one table)
        raise EvidenceError(f"evidence/acked_soak_end.json: {table} is not a table's record")
    after_id, rows = part.after_id, part.rows
    newer = [w for w in judged if w.id > after_id]
    missing = sorted(w.id for w in newer if str(w.id) not in rows)
    altered = sorted(w.id for w in newer if str(w.id) in rows and rows[str(w.id)] != w.digest)
    observed = {"judged": len(judged), "after_baseline": len(newer), "after_record": late, "after_id": after_id,
                "missing": missing, "altered": altered}
    if not missing and not altered:
        return True, observed, (f"{len(newer)} acknowledged writes after the baseline present and unchanged "
                                f"({len(judged) - len(newer)} more in the checksum)")
    parts = [f"{len(missing)} missing (ids {_ids(missing)})"] if missing else []
    parts += [f"{len(altered)} altered (ids {_ids(altered)})"] if altered else []
    return False, observed, f"of {len(newer)} acknowledged writes after the baseline, " + ", ".join(parts)


def protect_queue(check: ProtectQueue, evidence: Evidence) -> Check:
    text = "protect " + ", ".join(f"queue({q})" for q in check.queues)
    acked = AckedWrites(evidence)
    observed: dict[str, object] = {}
    details, passed = [], True
    for queue in check.queues:
        ok, record, detail = _queue_intact(acked, queue)
        observed[f"queue({queue})"] = record
        details.append(detail)
        passed = passed and ok
    return Check(kind="protect_queue", text=text, passed=passed, observed=observed,
                 threshold="every acknowledged send queued or delivered at soak end", detail="; ".join(details))


def _queue_intact(acked: AckedWrites, queue: str) -> tuple[bool, dict[str, object], str]:
    if queue != "fanout":  # pragma: no cover (spine's one queue; the descriptor lists no other)
        raise EvidenceError(f"the verifier does not know how to follow queue {queue!r}")
    judged, late = acked.judged("messages", IN_FLIGHT_REAL_S)
    if not judged:
        return True, {"judged": 0, "after_record": late}, "queue(fanout): no acknowledged send to judge"
    part = acked.part("fanout")
    if isinstance(part, PartUnreadable):
        return False, {"judged": len(judged), "error": part.error}, \
            f"queue(fanout): {len(judged)} acknowledged sends could not be followed at soak end: {part.error}"
    if not isinstance(part, FanoutAtSoakEnd):  # pragma: no cover (the record's one queue)
        raise EvidenceError("evidence/acked_soak_end.json: fanout is not a queue's record")
    queued = set(part.pending) | set(part.queued)
    inboxes = {channel: {user: (set(box.ids), box.floor) for user, box in users.items()}
               for channel, users in part.inboxes.items()}
    still_queued, delivered, dropped = 0, 0, []
    for write in judged:
        if write.id in queued:
            still_queued += 1
            continue
        recipients = [user for user in part.members.get(write.channel, ()) if user != write.author]
        boxes = inboxes.get(write.channel, {})
        if all(_in_inbox(boxes.get(user), write.id, write.seq) for user in recipients):
            delivered += 1
        else:
            dropped.append(write.id)
    observed = {"judged": len(judged), "after_record": late, "queued": still_queued, "delivered": delivered,
                "dropped": sorted(dropped)}
    summary = f"queue(fanout): of {len(judged)} acknowledged sends, {delivered} delivered, {still_queued} still queued"
    if dropped:
        return False, observed, summary + f", {len(dropped)} dropped (ids {_ids(dropped)})"
    return True, observed, summary + ", none dropped"


def _in_inbox(inbox: tuple[set[int], int | None] | None, id_: int, seq: int) -> bool:
    if inbox is None:
        return False
    ids, floor = inbox
    return id_ in ids or (floor is not None and seq <= floor)
