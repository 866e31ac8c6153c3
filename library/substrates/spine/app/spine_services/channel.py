"""channel: lists channels, serves reads and unread counts.

Routes:
- [channels] GET /channels -> {"channels": [{"name", "topic", "last_seq"}]}
- [read]     GET /channels/{channel}/messages?after=N&limit=M
             -> {"channel", "messages": [{seq, author, body, created_at}]}
             While the admin event `read_consistency_strict` is on, a read holds its database
             connection for READ_CONSISTENCY_HOLD_MS before querying ("wait until every write is
             visible"): latency first, then pool exhaustion and timeouts under load. A read by a
             user moves that user's read cursor (best effort: a Redis refusal does not fail the read).
- [unread]   GET /unread -> {"unread": {channel: n}, "total": n} for the user's channels.
"""

from __future__ import annotations

import logging

import redis.exceptions
from aiohttp import web
from prometheus_client import Counter

from spine_services.app import DbComponent, ServiceContext, strict_hold
from spine_services.common import (
    USER_HEADER,
    RedisLink,
    http_error,
    inbox_key,
    read_key,
    request_user,
)

log = logging.getLogger(__name__)
CURSOR_FAILURES = Counter("spine_read_cursor_failures_total", "read cursors Redis refused to store")


class Channel(DbComponent):
    def __init__(self, ctx: ServiceContext) -> None:
        super().__init__(ctx)
        self.link = RedisLink(ctx.config.get("REDIS_URL"))
        self.redis = self.link.client
        self._memberships: dict[str, tuple[str, ...]] = {}

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/channels", self.channels, name="channels"),
            web.get("/channels/{channel}/messages", self.read, name="read"),
            web.get("/unread", self.unread, name="unread"),
        ]

    async def start(self) -> None:
        await super().start()
        self.link.start()

    async def stop(self) -> None:
        await super().stop()
        await self.link.stop()

    def not_ready(self) -> str:
        return super().not_ready() or ("" if self.link.ready else f"redis: {self.link.last_error}")

    async def channels(self, _: web.Request) -> web.Response:
        async with self.db.connection() as conn:
            rows = await conn.fetch("SELECT name, topic, last_seq FROM channels ORDER BY id")
        return web.json_response({"channels": [dict(row) for row in rows]})

    async def read(self, request: web.Request) -> web.Response:
        name = request.match_info["channel"]
        try:
            after = int(request.query.get("after", "0"))
            limit = min(max(int(request.query.get("limit", "50")), 1), 500)
        except ValueError:
            raise http_error(web.HTTPBadRequest, "bad_request", "after and limit are integers") from None
        async with self.db.connection() as conn:
            await strict_hold(self.ctx)
            exists = await conn.fetchval("SELECT id FROM channels WHERE name = $1", name)
            if exists is None:
                raise http_error(web.HTTPNotFound, "unknown_channel", f"no such channel {name!r}")
            rows = await conn.fetch(
                "SELECT seq, author, body, created_at FROM messages"
                " WHERE channel_id = $1 AND seq > $2 ORDER BY seq, id LIMIT $3",
                exists, after, limit,
            )
        messages = [{**dict(row), "created_at": row["created_at"].isoformat()} for row in rows]
        user = request.headers.get(USER_HEADER)
        if user and messages:
            try:
                await self.redis.hset(read_key(user), name, messages[-1]["seq"])
            except redis.exceptions.RedisError as exc:
                CURSOR_FAILURES.inc()
                log.debug("read cursor not stored: %s", exc)
        return web.json_response({"channel": name, "messages": messages})

    async def unread(self, request: web.Request) -> web.Response:
        user = request_user(request)
        channels = self._memberships.get(user)
        if channels is None:
            async with self.db.connection() as conn:
                rows = await conn.fetch(
                    "SELECT c.name FROM channel_members m JOIN users u ON u.id = m.user_id"
                    " JOIN channels c ON c.id = m.channel_id WHERE u.name = $1 ORDER BY c.id", user,
                )
            channels = self._memberships[user] = tuple(row["name"] for row in rows)
        cursors = await self.redis.hgetall(read_key(user))
        pipe = self.redis.pipeline(transaction=False)
        for channel in channels:
            pipe.zcount(inbox_key(user, channel), f"({int(cursors.get(channel, 0))}", "+inf")
        counts = dict(zip(channels, await pipe.execute(), strict=True))
        return web.json_response({"unread": counts, "total": sum(counts.values())})
