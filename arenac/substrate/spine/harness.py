"""What spine's driver does with the harness's hands: the backlog of its queue, the
acknowledged-state reads at soak end (docs/evidence.md, `acked_soak_end.json`; arenac/runner/acked.py
records them), the send burst and the health probe.

Contract:
- `backlog(hands, queue)`: the length the queue's service reports (`GET /admin/backlog` of the
  service of that name: spine's one queue is the fanout service's); raises on a reply without one.
- `runs(hands, job)`: the runs the job's service counts as completed since it started (`completed`
  of `GET /admin/windows` of the service of that name: spine's one job is the maintenance service's),
  and the failed runs among the recent windows it lists (their start and error).
- `acked_messages(hands, baseline_max_ids)`: every row of `messages` with an id above the
  baseline's maximum (`after_id`; the rows up to it are covered by the baseline checksum), as
  id -> `write_digest(channel name, author, body)`, the digest the writer computed from what it
  sent. The sequence counter is not in it: a permitted renumbering changes no digest.
- `fanout_state(hands)`: where each fan-out event is, read in the direction events move (parked
  in PostgreSQL, then the Redis queue, then the inboxes), so that an event moving on while the
  record is taken is still seen in a later place: `pending` (message ids in fanout_pending),
  `queued` (ids of the events in the fanout service's FANOUT_QUEUE), `members` (channel -> users),
  and `inboxes` (channel -> user -> ids, and the floor: spine trims an inbox to its newest
  INBOX_CAP entries, so an event at or below the lowest seq kept may have been delivered and
  trimmed).
- `send_burst(endpoints, channel, messages, concurrency, acks)`: `messages` sends of `burst N` to
  `channel` through the gateway as the first seeded user, `concurrency` in flight at once, each
  accepted one recorded in `acks` (the route client's own send: routes.py). Failures are counted,
  not raised: a faulty stack may refuse some of them; a login the gateway refuses raises.
- `health_problem(endpoints)`: "" when every service answers /readyz with 200 and a seeded user
  (`ada`) can log in and send a message to `general` through the gateway, else why not.
The soak-end reads raise when a datastore refuses; the caller records that (a part that cannot be
read).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import aiohttp
import redis

from arenac.loadgen.acks import AckLog, write_digest
from arenac.model.evidence import FanoutAtSoakEnd, Inbox, MessagesAtSoakEnd
from arenac.substrate.interface import BurstCount, Endpoints, FailedJobRun, HarnessHands, JobReading
from arenac.substrate.spine.routes import SpineClient
from arenac.substrate.spine.seed import USERS
from spine_services.common import INBOX_CAP, inbox_key

PROBE_USER, PROBE_CHANNEL = USERS[0], "general"


def backlog(hands: HarnessHands, queue: str) -> int:
    return int(hands.admin(queue, "GET", "/admin/backlog")["backlog"])


def runs(hands: HarnessHands, job: str) -> JobReading:
    reply = hands.admin(job, "GET", "/admin/windows")
    failed = tuple(FailedJobRun(start_unix=float(window["start"]), error=str(window["error"]))
                   for window in reply.get("windows", ()) if window.get("error"))
    return JobReading(completed=int(reply["completed"]), failed=failed)


def health_problem(endpoints: Endpoints) -> str:
    for name, url in endpoints.services.items():
        status, _ = _http("GET", url + "/readyz")
        if status != 200:
            return f"{name} is not ready (HTTP {status})"
    status, body = _http("POST", endpoints.gateway + "/api/login", {"user": PROBE_USER})
    if status != 200 or not isinstance(body, dict):
        return f"login probe failed (HTTP {status})"
    status, _ = _http("POST", f"{endpoints.gateway}/api/channels/{PROBE_CHANNEL}/messages",
                      {"text": "arenac health probe"}, token=str(body.get("token")))
    return "" if 200 <= status < 300 else f"send probe failed (HTTP {status})"


def acked_messages(hands: HarnessHands, baseline_max_ids: Mapping[str, int]) -> MessagesAtSoakEnd:
    after_id = int(baseline_max_ids.get("messages", 0))
    rows = hands.query("SELECT m.id, coalesce(c.name, ''), m.author, m.body FROM messages m "
                       f"LEFT JOIN channels c ON c.id = m.channel_id WHERE m.id > {after_id} ORDER BY m.id")
    return MessagesAtSoakEnd(after_id=after_id, rows={str(id_): write_digest(channel, author, body)
                                                      for id_, channel, author, body in rows})


def fanout_state(hands: HarnessHands) -> FanoutAtSoakEnd:
    queue = hands.admin("fanout", "GET", "/admin/config")["config"]["FANOUT_QUEUE"]
    members: dict[str, list[str]] = {}
    for channel, user in hands.query("SELECT c.name, u.name FROM channel_members m "
                                     "JOIN channels c ON c.id = m.channel_id "
                                     "JOIN users u ON u.id = m.user_id ORDER BY 1, 2"):
        members.setdefault(channel, []).append(user)
    pending = sorted(int(id_) for (id_,) in hands.query("SELECT message_id FROM fanout_pending"))
    client = redis.Redis.from_url(hands.endpoints.redis, socket_timeout=10, decode_responses=True)
    try:
        queued = sorted(_event_ids(client.lrange(queue, 0, -1)))
        pipe = client.pipeline(transaction=False)
        keys = [(channel, user) for channel, users in sorted(members.items()) for user in users]
        for channel, user in keys:
            pipe.zrange(inbox_key(user, channel), 0, -1, withscores=True)
        inboxes: dict[str, dict[str, Inbox]] = {}
        for (channel, user), entries in zip(keys, pipe.execute(), strict=True):
            ids = sorted(int(member) for member, _ in entries if member.isdigit())
            floor = int(min(score for _, score in entries)) if len(entries) >= INBOX_CAP else None
            inboxes.setdefault(channel, {})[user] = Inbox(ids=tuple(ids), floor=floor)
    finally:
        client.close()
    return FanoutAtSoakEnd(queue=queue, pending=tuple(pending), queued=tuple(queued),
                           members={channel: tuple(users) for channel, users in members.items()},
                           inbox_cap=INBOX_CAP, inboxes=inboxes)


def _event_ids(raw: list[bytes | str]) -> list[int]:
    ids = []
    for item in raw:
        try:
            ids.append(int(json.loads(item)["id"]))
        except (ValueError, KeyError, TypeError):
            pass  # not an event the fanout worker could deliver either
    return ids


async def send_burst(endpoints: Endpoints, channel: str, messages: int, concurrency: int,
                     acks: AckLog | None) -> BurstCount:
    client, user = SpineClient(endpoints.gateway), USERS[0]
    client.acks = acks
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        await client.login(session, user)
        slots = asyncio.Semaphore(concurrency)

        async def send(index: int) -> bool:
            call = client.send(channel, user, f"burst {index}")
            async with slots:
                try:
                    async with session.request(call.method, call.url, json=call.json, headers=call.headers) as reply:
                        body = await reply.read()
                except (aiohttp.ClientError, TimeoutError):
                    return False
            if call.on_reply is not None:
                call.on_reply(reply.status, body)
            return reply.status == 201

        accepted = sum(await asyncio.gather(*(send(i) for i in range(messages))))
    return BurstCount(accepted=accepted, refused=messages - accepted)


def _http(method: str, url: str, body: Any = None, token: str | None = None,
          timeout: float = 2.0) -> tuple[int, Any]:
    """(status, the body as JSON or text); status 0 when nothing answered."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw, status = response.read(), response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except OSError:
        return 0, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")
