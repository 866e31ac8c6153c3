"""What became of the acknowledged writes, recorded at soak end (docs/evidence.md, `acked_soak_end.json`).

The load generator (evidence/acks.jsonl) and the harness's send bursts (evidence/harness_acks.jsonl)
record every write they were told succeeded. At soak end, after the agent was frozen and before the
restart challenge, the runner records the state the verifier needs to judge them
(arenac/verify/acked.py), so that the verifier stays a pure function of the evidence:

- `messages`: every row with an id above the baseline's maximum id (`after_id`; the rows up to it
  are covered by the baseline checksum), as id -> `write_digest(channel name, author, body)`, the
  digest the writer computed from what it sent. The sequence counter is not in it: a permitted
  renumbering changes no digest.
- `fanout`: where each fan-out event is, read in the direction events move (parked in PostgreSQL,
  then the Redis queue, then the inboxes), so that an event moving on while the record is taken
  is still seen in a later place: `pending` (message ids in fanout_pending), `queued` (ids of the
  events in the fanout service's FANOUT_QUEUE), `members` (channel -> users), and `inboxes`
  (channel -> user -> {"ids": sorted message ids, "floor": the lowest seq kept when the inbox holds
  at least `inbox_cap` entries, else null}: spine trims an inbox to its newest `inbox_cap` entries,
  so an event at or below the floor may have been delivered and trimmed).
- A part that cannot be read (Redis or PostgreSQL refused) is {"error": "..."}; the checks that need
  it then fail: what cannot be seen at soak end cannot be shown to be intact.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import redis

from arenac.loadgen.acks import write_digest
from arenac.model.evidence import AckedSoakEnd, FanoutAtSoakEnd, Inbox, MessagesAtSoakEnd, PartUnreadable
from arenac.runner.harness_io import HarnessIO


def record_acked_state(io: HarnessIO, t: float, baseline_max_ids: dict[str, int] | None) -> AckedSoakEnd:
    after_id = int((baseline_max_ids or {}).get("messages", 0))
    return AckedSoakEnd(t=round(t, 3), messages=_guarded(_messages, io, after_id), fanout=_guarded(_fanout, io))


Part = TypeVar("Part", MessagesAtSoakEnd, FanoutAtSoakEnd)


def _guarded(part: Callable[..., Part], *args) -> Part | PartUnreadable:
    try:
        return part(*args)
    except Exception as error:  # recorded: the checks that need this part fail
        return PartUnreadable(error=f"{type(error).__name__}: {error}")


def _messages(io: HarnessIO, after_id: int) -> MessagesAtSoakEnd:
    rows = io.query("SELECT m.id, coalesce(c.name, ''), m.author, m.body FROM messages m "
                    f"LEFT JOIN channels c ON c.id = m.channel_id WHERE m.id > {after_id} ORDER BY m.id")
    return MessagesAtSoakEnd(after_id=after_id, rows={str(id_): write_digest(channel, author, body)
                                                      for id_, channel, author, body in rows})


def _fanout(io: HarnessIO) -> FanoutAtSoakEnd:
    cap = io.substrate.inbox_cap  # the fan-out keeps this many entries: a full inbox has lost its oldest
    queue = io.admin("fanout", "GET", "/admin/config")["config"]["FANOUT_QUEUE"]
    members: dict[str, list[str]] = {}
    for channel, user in io.query("SELECT c.name, u.name FROM channel_members m JOIN channels c ON c.id = m.channel_id "
                                  "JOIN users u ON u.id = m.user_id ORDER BY 1, 2"):
        members.setdefault(channel, []).append(user)
    pending = sorted(int(id_) for (id_,) in io.query("SELECT message_id FROM fanout_pending"))
    client = redis.Redis.from_url(io.endpoints.redis, socket_timeout=10, decode_responses=True)
    try:
        queued = sorted(_event_ids(client.lrange(queue, 0, -1)))
        pipe = client.pipeline(transaction=False)
        keys = [(channel, user) for channel, users in sorted(members.items()) for user in users]
        for channel, user in keys:
            pipe.zrange(io.substrate.inbox_key(user, channel), 0, -1, withscores=True)
        inboxes: dict[str, dict[str, Inbox]] = {}
        for (channel, user), entries in zip(keys, pipe.execute(), strict=True):
            ids = sorted(int(member) for member, _ in entries if member.isdigit())
            floor = int(min(score for _, score in entries)) if len(entries) >= cap else None
            inboxes.setdefault(channel, {})[user] = Inbox(ids=tuple(ids), floor=floor)
    finally:
        client.close()
    return FanoutAtSoakEnd(queue=queue, pending=tuple(pending), queued=tuple(queued),
                           members={channel: tuple(users) for channel, users in members.items()},
                           inbox_cap=cap, inboxes=inboxes)


def _event_ids(raw: list[bytes | str]) -> list[int]:
    ids = []
    for item in raw:
        try:
            ids.append(int(json.loads(item)["id"]))
        except (ValueError, KeyError, TypeError):
            pass  # not an event the fanout worker could deliver either
    return ids
