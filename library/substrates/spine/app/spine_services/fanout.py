"""fanout: the worker that turns sent messages into inbox entries and unread counts.

Loop (one consumer):
1. Every half second, move events parked in `fanout_pending` (Redis refused them at send time)
   back to the queue, and measure the backlog.
2. Peek at the oldest FANOUT_BATCH events of the Redis list FANOUT_QUEUE (LRANGE), add each to the
   inbox of every channel member but the author (ZADD, idempotent), then remove them (RPOP).
   Peek-then-pop means a failure in the middle loses nothing: the batch is simply done again.
Inbox writes and pops use the ACL user `fanout` (REDIS_FANOUT_URL); when Redis refuses them
(maxmemory reached with noeviction, or the ACL denies a command) the worker retries with a back-off
and the backlog grows.

Backlog = length of the queue + events parked in PostgreSQL; `GET /admin/backlog` ->
{"backlog": N, "queue": q, "pending": p}, also the gauge `spine_fanout_backlog` in /metrics. It is
measured with the application's Redis user, so a denied `fanout` user still reports a number.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import asyncpg
import redis.exceptions
from aiohttp import web
from prometheus_client import Counter, Gauge

from spine_services.app import DbComponent, ServiceContext, error
from spine_services.common import (
    INBOX_CAP,
    ChannelDirectory,
    RedisLink,
    inbox_key,
    load_when_ready,
)
from spine_services.db import NotReady, PoolTimeout

log = logging.getLogger(__name__)
BACKLOG = Gauge("spine_fanout_backlog", "events not fanned out yet (queue + parked)")
FANNED = Counter("spine_fanout_events_total", "events fanned out")
FAILURES = Counter("spine_fanout_failures_total", "fan-out rounds that failed", ["stage"])
_TRANSIENT = (redis.exceptions.RedisError, asyncpg.PostgresError, PoolTimeout, NotReady, OSError)


class Fanout(DbComponent):
    def __init__(self, ctx: ServiceContext) -> None:
        super().__init__(ctx)
        self.app_link = RedisLink(ctx.config.get("REDIS_URL"))
        self.worker_link = RedisLink(ctx.config.get("REDIS_FANOUT_URL"))
        self.directory = ChannelDirectory(self.db)
        self.last_error = ""
        self._tasks: list[asyncio.Task[None]] = []

    def routes(self) -> list[web.RouteDef]:
        return []

    def admin_routes(self) -> list[web.RouteDef]:
        return [web.get("/admin/backlog", self.backlog)]

    async def start(self) -> None:
        await super().start()
        self.app_link.start()
        self.worker_link.start()
        self._tasks = [asyncio.create_task(self._work()), asyncio.create_task(self._housekeeping())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await super().stop()
        await self.app_link.stop()
        await self.worker_link.stop()

    def not_ready(self) -> str:
        for link, name in ((self.app_link, "redis"), (self.worker_link, "redis (fanout user)")):
            if not link.ready:
                return f"{name}: {link.last_error}"
        return super().not_ready() or ("" if self.directory.loaded else "loading channel members")

    @property
    def _queue(self) -> str:
        return self.ctx.config.get("FANOUT_QUEUE")

    async def measure(self) -> tuple[int, int]:
        queue = await self.app_link.client.llen(self._queue)
        async with self.db.connection() as conn:
            pending = await conn.fetchval("SELECT count(*) FROM fanout_pending")
        BACKLOG.set(queue + pending)
        return queue, pending

    async def backlog(self, _: web.Request) -> web.Response:
        try:
            queue, pending = await self.measure()
        except _TRANSIENT as exc:
            return error(503, "backlog_unknown", f"{type(exc).__name__}: {exc}")
        return web.json_response({"backlog": queue + pending, "queue": queue, "pending": pending,
                                  "last_error": self.last_error})

    async def _work(self) -> None:
        await load_when_ready(self.directory)
        delay = 0.0
        while True:
            try:
                done = await self._fan_out_batch()
                delay = 0.0 if done else 0.05
                self.last_error = ""
            except _TRANSIENT as exc:
                FAILURES.labels("fan_out").inc()
                self.last_error = f"{type(exc).__name__}: {exc}"
                delay = min(max(delay * 2, 0.1), 1.0)
            await asyncio.sleep(delay)

    async def _housekeeping(self) -> None:
        last_members = time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            try:
                await self._requeue_parked()
            except _TRANSIENT as exc:
                FAILURES.labels("requeue").inc()
                log.debug("requeue failed: %s", exc)
            try:
                await self.measure()
            except _TRANSIENT:
                pass
            if time.monotonic() - last_members > 30:  # pick up membership changes
                last_members = time.monotonic()
                try:
                    await self.directory.load()
                except _TRANSIENT:
                    pass

    async def _requeue_parked(self) -> None:
        async with self.db.connection() as conn:
            rows = await conn.fetch("SELECT id, event FROM fanout_pending ORDER BY id LIMIT 500")
            if not rows:
                return
            await self.app_link.client.lpush(self._queue, *[row["event"] for row in rows])
            await conn.execute("DELETE FROM fanout_pending WHERE id = ANY($1::bigint[])", [row["id"] for row in rows])

    async def _fan_out_batch(self) -> int:
        worker = self.worker_link.client
        batch = self.ctx.config.get_int("FANOUT_BATCH")
        raw = await worker.lrange(self._queue, -batch, -1)
        if not raw:
            return 0
        pipe = worker.pipeline(transaction=False)
        for item in raw:
            event = json.loads(item)
            for member in self.directory.members.get(event["channel_id"], ()):
                if member == event["author"]:
                    continue
                key = inbox_key(member, event["channel"])
                pipe.zadd(key, {str(event["id"]): event["seq"]})
                if event["seq"] % 50 == 0:  # keep inboxes bounded without trimming on every write
                    pipe.zremrangebyrank(key, 0, -(INBOX_CAP + 1))
        await pipe.execute()
        await worker.rpop(self._queue, len(raw))
        FANNED.inc(len(raw))
        return len(raw)
