"""message: accepts messages and numbers them (the sequencer).

[send]   POST   /channels/{channel}/messages {"text": ...} (user from X-Spine-User) -> 201 {"seq", "id", "channel"}
[delete] DELETE /channels/{channel}/messages/{seq} (user from X-Spine-User)
         -> 200 {"channel", "seq", "deleted": [ids]}: the user's own message at that seq, removed from
         `messages` (the application role's DELETE privilege). 404 `unknown_message` when the
         channel has no message at that seq, 403 `not_author` when it has only others' messages
         there, 400 when seq is not a positive whole number. Should a faulty sequencer have given
         two of the user's messages the same seq, both go, and `deleted` names every id removed.
         The message's inbox entries stay (unread counts catch up as readers move on); its seq
         stays used: the sequencer never hands it out again, so a deletion leaves a hole in the
         channel's seqs.

The sequencer gives each channel dense, unique seqs:
- `SEQUENCER_MODE=atomic`: one transaction increments `channels.last_seq` (the channel row's
  lock serialises the channel's sends) and inserts the message.
- `SEQUENCER_MODE=rmw` (and release 1.5.0 whatever the mode): read the counter, then insert with
  counter + 1 and write the counter back; two concurrent sends read the same value and both get it.
After the commit the fan-out event goes to the Redis list FANOUT_QUEUE. When Redis refuses it (out
of memory, ACL, down) the event is parked in the table `fanout_pending` instead, and the send still
succeeds: the message is committed, fan-out is late (the fanout backlog shows it).
Release 1.5.1 leaks a session: see releases.py.
"""

from __future__ import annotations

import json
import logging

import asyncpg
import redis.exceptions
from aiohttp import web
from prometheus_client import Counter

from spine_services.app import DbComponent, ServiceContext, error
from spine_services.common import ChannelDirectory, RedisLink, json_object, request_user

log = logging.getLogger(__name__)
PARKED = Counter("spine_fanout_events_parked_total", "fan-out events Redis refused, parked in fanout_pending")
LEAKED = Counter("spine_leaked_sessions_total", "sessions left idle in transaction (release 1.5.1)")


class Message(DbComponent):
    def __init__(self, ctx: ServiceContext) -> None:
        super().__init__(ctx)
        self.link = RedisLink(ctx.config.get("REDIS_URL"))
        self.directory = ChannelDirectory(self.db)
        self._leaked: list[asyncpg.Connection] = []

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/channels/{channel}/messages", self.send, name="send"),
                web.delete("/channels/{channel}/messages/{seq}", self.delete, name="delete")]

    async def start(self) -> None:
        await super().start()
        self.link.start()

    async def stop(self) -> None:
        for conn in self._leaked:
            conn.terminate()
        await super().stop()
        await self.link.stop()

    def not_ready(self) -> str:
        return super().not_ready() or ("" if self.link.ready else f"redis: {self.link.last_error}")

    @property
    def _rmw(self) -> bool:
        return self.ctx.release.sequencer_always_rmw or self.ctx.config.get("SEQUENCER_MODE") == "rmw"

    async def send(self, request: web.Request) -> web.Response:
        user = request_user(request)
        text = (await json_object(request)).get("text")
        if not isinstance(text, str) or not text:
            return error(400, "bad_request", 'expected {"text": "..."}')
        name = request.match_info["channel"]
        channel_id = await self.directory.channel_id(name)
        async with self.db.connection() as conn:
            if self._rmw:
                # read, then write back: the window between the two is the defect
                seq = await conn.fetchval("SELECT last_seq FROM channels WHERE id = $1", channel_id) + 1
                async with conn.transaction():
                    message_id = await self._insert(conn, channel_id, seq, user, text)
                    await conn.execute(
                        "UPDATE channels SET last_seq = GREATEST(last_seq, $2) WHERE id = $1",
                        channel_id, seq,
                    )
            else:
                async with conn.transaction():
                    seq = await conn.fetchval(
                        "UPDATE channels SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq",
                        channel_id,
                    )
                    message_id = await self._insert(conn, channel_id, seq, user, text)
            event = json.dumps({"id": message_id, "channel": name, "channel_id": channel_id, "seq": seq,
                                "author": user})
            try:
                await self.link.client.lpush(self.ctx.config.get("FANOUT_QUEUE"), event)
            except redis.exceptions.RedisError as exc:
                PARKED.inc()
                log.info("fan-out event parked: %s", exc)
                await conn.execute("INSERT INTO fanout_pending (message_id, event) VALUES ($1, $2)", message_id, event)
        every = self.ctx.release.leak_every_nth_seq
        if every and seq % every == 0:
            await self._audit_activity(channel_id)
        return web.json_response({"seq": seq, "id": message_id, "channel": name}, status=201)

    async def delete(self, request: web.Request) -> web.Response:
        user = request_user(request)
        try:
            seq = int(request.match_info["seq"])
        except ValueError:
            seq = 0
        if seq <= 0:
            return error(400, "bad_request", "seq is a positive whole number")
        name = request.match_info["channel"]
        channel_id = await self.directory.channel_id(name)
        async with self.db.connection() as conn:
            own = await conn.fetch(
                "DELETE FROM messages WHERE channel_id = $1 AND seq = $2 AND author = $3 RETURNING id",
                channel_id, seq, user,
            )
            if not own and await conn.fetchval("SELECT 1 FROM messages WHERE channel_id = $1 AND seq = $2",
                                               channel_id, seq) is not None:
                return error(403, "not_author", f"message {seq} in channel {name!r} is not {user}'s")
        if not own:
            return error(404, "unknown_message", f"no message {seq} in channel {name!r}")
        return web.json_response({"channel": name, "seq": seq, "deleted": sorted(row["id"] for row in own)})

    @staticmethod
    async def _insert(conn: asyncpg.Connection, channel_id: int, seq: int, author: str, text: str) -> int:
        return await conn.fetchval(
            "INSERT INTO messages (channel_id, seq, author, body) VALUES ($1, $2, $3, $4) RETURNING id",
            channel_id, seq, author, text,
        )

    async def _audit_activity(self, channel_id: int) -> None:
        """The 1.5.1 defect: reads the counter "consistently" under a row lock in a session of
        its own, then returns on an early path without COMMIT. The session stays idle in
        transaction, holding the lock, until PostgreSQL ends it."""
        self._leaked = [conn for conn in self._leaked if not conn.is_closed()]
        conn = await self.db.connect_outside_pool()
        await conn.execute("BEGIN")
        await conn.fetchval("SELECT last_seq FROM channels WHERE id = $1 FOR UPDATE", channel_id)
        self._leaked.append(conn)
        LEAKED.inc()
