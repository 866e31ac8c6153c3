"""Acknowledged writes: none may be lost unseen (docs/evidence.md, `acks.jsonl`, `acked_soak_end.json`).

Contract:
- The acknowledged writes are the lines of evidence/acks.jsonl (the load generator; required) and
  evidence/harness_acks.jsonl (the harness's send bursts; absent = none). A write is *judged* when
  its answer arrived before the soak-end record was taken (`t` at least `MARGIN_REAL_S` real seconds,
  in plan seconds, before the record's `t`); later ones are counted, not judged.
- `protect table(T)` (with the baseline checksum, arenac/verify/safety.py): every judged
  acknowledged write to T with an id above the record's `after_id` exists at soak end with the digest
  of what was sent (`missing`: no such row; `altered`: another digest), unless the client deleted it:
  a write whose row a deletion line of the same table names (`op` "delete", answered or not) with
  its request sent before the record (`requested` at most `MARGIN_REAL_S` real seconds after the
  record's `t`) may be gone (`deleted`); if its row is there it must still be unchanged. A row gone
  that no deletion of the client's names is `missing`, whoever removed it. Writes at or below
  `after_id` existed at the baseline and are covered by its checksum; the client never deletes one
  (arenac/loadgen/generator.py, KEEP_AFTER_WARMUP_REAL_S), and a deletion of one is the harness's
  broken promise (`baseline_deletions`, EvidenceError: the checksum cannot be judged). Sequence
  counters are in neither digest, so a permitted renumbering passes. No acknowledged write to T:
  nothing more to judge.
- Sequences (`client_deletions`): a deletion leaves a hole in its sequence (its seq is not handed
  out again), so the sequence checks (arenac/verify/safety.py, the `violations` metric) excuse one
  gap, and one row fewer, for every row of the sequence's table the client asked to delete before
  the snapshot they read. The snapshots count gaps, not which seqs are missing, so an excuse is by
  number; the rows themselves are `protect table`'s to account for, one by one.
- `protect queue(fanout)`: every acknowledged send answered at least `IN_FLIGHT_REAL_S` real seconds
  before the record (younger events may be between the queue and the inboxes) has its fan-out event
  still queued (parked in
  PostgreSQL or in the Redis queue) or delivered (its id in the inbox of every member of its channel
  but its author; an inbox at its cap excuses an event whose seq is at or below the inbox's floor,
  as spine trims the oldest entries). Otherwise it was dropped, and the check fails.
- `protect queue(fanout) at ...` is judged so at each record it names: `soak_end` (the default)
  reads acked_soak_end.json; `after_restart` reads acked_after_restart.json, taken at the end of the
  restart challenge's re-check, and judges every send answered before that record's in-flight margin,
  those of the soak included. A send dropped there is also placed by where the soak-end record saw
  it (`lost_queued`: parked or in the queue then, so lost in the restart; `lost_delivered`: in every
  recipient's inbox then; `lost_later`: sent after it), so that a Redis that kept nothing across the
  restart reads as such.
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


# the record of each label a queue's protection may be judged at (model/gates.py QUEUE_RECORDS)
RECORD_FILES = {"soak_end": "acked_soak_end.json", "after_restart": "acked_after_restart.json"}


@dataclass
class AckedWrites:
    """The acknowledged writes of a run and one record of what became of them (the soak-end one
    unless `record_file` names another), read once."""

    evidence: Evidence
    record_file: str = RECORD_FILES["soak_end"]

    @cached_property
    def writes(self) -> list[AckedWrite]:
        """The acknowledged writes (the lines without `op` "delete")."""
        return [line for line in self.lines if line.op == "insert"]

    @cached_property
    def deletes(self) -> list[AckedWrite]:
        """The deletions the clients asked for, answered or not (the lines with `op` "delete")."""
        return [line for line in self.lines if line.op == "delete"]

    @cached_property
    def lines(self) -> list[AckedWrite]:
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
        return read_model(self.evidence.directory / self.record_file, AckedSoakEnd, f"evidence/{self.record_file}")

    def part(self, name: str) -> MessagesAtSoakEnd | FanoutAtSoakEnd | PartUnreadable:
        part: MessagesAtSoakEnd | FanoutAtSoakEnd | PartUnreadable | None = getattr(self.record, name)
        if part is None:
            raise EvidenceError(f"evidence/{self.record_file}: no {name}")
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

    def deleted(self, table: str) -> set[int]:
        """The ids of `table` the clients asked to delete before the record (their request sent at
        most `MARGIN_REAL_S` real seconds after its `t`: the clocks agree to within that)."""
        return client_deletions(self.evidence, table, self.record.t, lines=self.deletes)

    def baseline_deletions(self, table: str) -> list[int]:
        """The ids at or below the record's `after_id` (rows the baseline checksum covers) that the
        clients asked to delete before it; the load generator never asks for one."""
        if not any(d.table == table for d in self.deletes):
            return []
        part = self.part(table)
        if not isinstance(part, MessagesAtSoakEnd):
            return []
        return sorted(i for i in self.deleted(table) if i <= part.after_id)


def client_deletions(evidence: Evidence, table: str, until_t: float, after_t: float | None = None,
                     lines: list[AckedWrite] | None = None) -> set[int]:
    """The ids of `table` whose deletion a client asked for (answered or not) with the request sent
    after `after_t` (None: ever) and at most `MARGIN_REAL_S` real seconds after `until_t`: the rows
    a snapshot or record at `until_t` may legitimately lack. Read from acks.jsonl (none without it:
    only a run whose load could delete has one with deletions)."""
    if lines is None:
        if not (evidence.directory / "acks.jsonl").exists():
            return set()
        lines = AckedWrites(evidence).deletes
    slack = MARGIN_REAL_S / (evidence.timeline.time_scale or 1.0)
    return {d.id for d in lines if d.table == table and d.requested is not None
            and d.requested <= until_t + slack and (after_t is None or d.requested > after_t)}


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
    excused = acked.deleted(table) if any(d.table == table for d in acked.deletes) else set()
    gone = [w.id for w in newer if str(w.id) not in rows]
    deleted = sorted(i for i in gone if i in excused)
    missing = sorted(i for i in gone if i not in excused)
    altered = sorted(w.id for w in newer if str(w.id) in rows and rows[str(w.id)] != w.digest)
    observed = {"judged": len(judged), "after_baseline": len(newer), "after_record": late, "after_id": after_id,
                "missing": missing, "altered": altered}
    if excused:  # only a run whose client deletes says so (the record of the others stays as it was)
        observed["deleted"] = deleted
    present = len(newer) - len(gone)
    if not missing and not altered:
        return True, observed, (f"{present} acknowledged writes after the baseline present and unchanged"
                                + (f", {len(deleted)} deleted by the client" if deleted else "")
                                + f" ({len(judged) - len(newer)} more in the checksum)")
    parts = [f"{len(missing)} missing (ids {_ids(missing)}; no deletion of the client's names them)"
             if excused else f"{len(missing)} missing (ids {_ids(missing)})"] if missing else []
    parts += [f"{len(altered)} altered (ids {_ids(altered)})"] if altered else []
    parts += [f"{len(deleted)} deleted by the client"] if deleted else []
    return False, observed, f"of {len(newer)} acknowledged writes after the baseline, " + ", ".join(parts)


_WHEN = {"soak_end": "at soak end", "after_restart": "after the restart"}


def protect_queue(check: ProtectQueue, evidence: Evidence) -> Check:
    """Every queue of CHECK judged at every record it names (model/gates.py `ProtectQueue.records`);
    `observed` is keyed by queue and, when judged at more than soak end, by record too."""
    queues = ", ".join(f"queue({q})" for q in check.queues)
    text = f"protect {queues}" + (f" at {', '.join(check.at)}" if check.at else "")
    records = check.records
    observed: dict[str, object] = {}
    details, passed = [], True
    for label in records:
        acked = AckedWrites(evidence, RECORD_FILES[label])
        before = AckedWrites(evidence) if label != "soak_end" else None  # where each send was before it
        for queue in check.queues:
            ok, record, detail = _queue_intact(acked, queue, _WHEN[label], before)
            observed[f"queue({queue})" if records == ("soak_end",) else f"queue({queue}) {label}"] = record
            details.append(detail)
            passed = passed and ok
    threshold = "every acknowledged send queued or delivered " + " and ".join(_WHEN[label] for label in records)
    return Check(kind="protect_queue", text=text, passed=passed, observed=observed, threshold=threshold,
                 detail="; ".join(details))


def _queue_intact(acked: AckedWrites, queue: str, when: str = "at soak end",
                  before: AckedWrites | None = None) -> tuple[bool, dict[str, object], str]:
    """(passed, observed, detail) of one queue at ACKED's record; BEFORE, an earlier record (the
    soak end's), places each dropped send by where that record saw it."""
    if queue != "fanout":  # pragma: no cover (spine's one queue; the descriptor lists no other)
        raise EvidenceError(f"the verifier does not know how to follow queue {queue!r}")
    judged, late = acked.judged("messages", IN_FLIGHT_REAL_S)
    if not judged:
        return True, {"judged": 0, "after_record": late}, f"queue(fanout) {when}: no acknowledged send to judge"
    part = acked.part("fanout")
    if isinstance(part, PartUnreadable):
        return False, {"judged": len(judged), "error": part.error}, \
            f"queue(fanout): {len(judged)} acknowledged sends could not be followed {when}: {part.error}"
    if not isinstance(part, FanoutAtSoakEnd):  # pragma: no cover (the record's one queue)
        raise EvidenceError(f"evidence/{acked.record_file}: fanout is not a queue's record")
    where = _Places(part)
    still_queued, delivered, dropped = 0, 0, []
    for write in judged:
        place = where.of(write)
        if place == "queued":
            still_queued += 1
        elif place == "delivered":
            delivered += 1
        else:
            dropped.append(write)
    observed: dict[str, object] = {"judged": len(judged), "after_record": late, "queued": still_queued,
                                   "delivered": delivered, "dropped": sorted(w.id for w in dropped)}
    summary = (f"queue(fanout) {when}: of {len(judged)} acknowledged sends, {delivered} delivered, "
               f"{still_queued} still queued")
    if not dropped:
        return True, observed, summary + ", none dropped"
    summary += f", {len(dropped)} dropped (ids {_ids([w.id for w in dropped])})"
    if before is not None:
        lost = _placed_before(before, dropped)
        observed.update(lost)
        summary += (f": {len(lost['lost_queued'])} were queued at soak end, {len(lost['lost_delivered'])} "
                    f"delivered then, {len(lost['dropped_before'])} already dropped, "
                    f"{len(lost['lost_later'])} sent after it")
    return False, observed, summary


class _Places:
    """Where one fan-out record saw each send's event: "queued" (parked or in the queue),
    "delivered" (in the inbox of every member of its channel but its author), or "dropped"."""

    def __init__(self, part: FanoutAtSoakEnd):
        self.part = part
        self.queued = set(part.pending) | set(part.queued)
        self.inboxes = {channel: {user: (set(box.ids), box.floor) for user, box in users.items()}
                        for channel, users in part.inboxes.items()}

    def of(self, write: AckedWrite) -> str:
        if write.id in self.queued:
            return "queued"
        recipients = [user for user in self.part.members.get(write.channel, ()) if user != write.author]
        boxes = self.inboxes.get(write.channel, {})
        if all(_in_inbox(boxes.get(user), write.id, write.seq) for user in recipients):
            return "delivered"
        return "dropped"


_LOST = {"queued": "lost_queued", "delivered": "lost_delivered", "dropped": "dropped_before", "later": "lost_later"}


def _placed_before(before: AckedWrites, dropped: list[AckedWrite]) -> dict[str, list[int]]:
    """The dropped sends by where the earlier record saw them: queued or delivered there, or
    `dropped_before` (judged there, and nowhere); one it neither saw nor judged (answered in its
    last seconds or after it, or a record that could not be read) is `lost_later`."""
    placed: dict[str, list[int]] = {key: [] for key in _LOST.values()}
    part = before.part("fanout")
    judged = {w.id for w in before.judged("messages", IN_FLIGHT_REAL_S)[0]}
    where = _Places(part) if isinstance(part, FanoutAtSoakEnd) else None
    for write in dropped:
        place = where.of(write) if where is not None else "later"
        if place == "dropped" and write.id not in judged:
            place = "later"
        placed[_LOST[place]].append(write.id)
    return {key: sorted(ids) for key, ids in placed.items()}


def _in_inbox(inbox: tuple[set[int], int | None] | None, id_: int, seq: int) -> bool:
    if inbox is None:
        return False
    ids, floor = inbox
    return id_ in ids or (floor is not None and seq <= floor)
