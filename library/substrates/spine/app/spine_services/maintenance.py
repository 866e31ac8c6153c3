"""maintenance: a periodic job that recomputes channel statistics, with heavy writes and a CHECKPOINT.

Schedule (cron-like, anchored to the Unix epoch so that a restart does not move it): windows start
at every time t with t mod P == O and last D, where P = MAINT_PERIOD_S, O = MAINT_OFFSET_S and
D = MAINT_DURATION_S, each multiplied by TIME_SCALE. A load profile whose cycles are anchored the
same way (cycle length P) sees the window at the same point of every cycle.

During a window the job works in batches of at most LOCK_SLICE_S real seconds, one transaction
each (not multiplied by TIME_SCALE: a database holds a lock for real time whatever the plan clock,
so a compressed run sees stalls as long as a real one, only fewer of them): it locks every
channel's row, the sequencer (FOR UPDATE: "a consistent snapshot of the counters"), writes scratch
rows as fast as the database takes them and refreshes `channel_stats`. Sends stall behind each
batch (up to a slice each), so the window shows as a run of latency spikes, and as pool exhaustion
when the sends queued behind a batch outnumber the pool; at the end it truncates the scratch table
and runs CHECKPOINT. A window always runs one batch, however short its duration (a zero duration
still refreshes the statistics, holding the locks for one statement), so a run is the job's work
done. `GET /admin/windows` lists recent windows {"start", "end"[, "error"]} (Unix seconds), says
whether one is `active` now and how many windows `completed` (ran to their CHECKPOINT without an
error) since the process started: what the harness samples as `runs(maintenance)`; metrics
`spine_maintenance_active`, `spine_maintenance_windows_total` (every window, failed ones too),
`spine_maintenance_runs_completed_total`.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from dataclasses import dataclass

import asyncpg
from aiohttp import web
from prometheus_client import Counter, Gauge

from spine_services.app import DbComponent, ServiceContext
from spine_services.db import NotReady, PoolTimeout

LOCK_SLICE_S = 1.0  # real seconds: the longest a send waits behind one batch
ACTIVE = Gauge("spine_maintenance_active", "1 while a maintenance window runs")
WINDOWS = Counter("spine_maintenance_windows_total", "maintenance windows run")
COMPLETED = Counter("spine_maintenance_runs_completed_total", "maintenance windows that ran to their CHECKPOINT")


@dataclass(frozen=True)
class Schedule:
    period_s: float
    offset_s: float
    duration_s: float

    def next_start(self, now: float) -> float:
        """The first window start at or after `now`."""
        k = math.ceil((now - self.offset_s) / self.period_s)
        return k * self.period_s + self.offset_s


class Maintenance(DbComponent):
    def __init__(self, ctx: ServiceContext) -> None:
        super().__init__(ctx)
        self.windows: deque[dict[str, float | str]] = deque(maxlen=50)
        self._task: asyncio.Task[None] | None = None
        self.active = False
        self.completed = 0  # windows that ran to their CHECKPOINT since the process started

    def routes(self) -> list[web.RouteDef]:
        return []

    def admin_routes(self) -> list[web.RouteDef]:
        return [web.get("/admin/windows", self.list_windows)]

    def schedule(self) -> Schedule:
        config = self.ctx.config
        scale = config.get_float("TIME_SCALE")
        return Schedule(
            config.get_float("MAINT_PERIOD_S") * scale,
            config.get_float("MAINT_OFFSET_S") * scale,
            config.get_float("MAINT_DURATION_S") * scale,
        )

    async def start(self) -> None:
        await super().start()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await super().stop()

    async def list_windows(self, _: web.Request) -> web.Response:
        return web.json_response(
            {"windows": list(self.windows), "active": self.active, "completed": self.completed,
             "schedule": self.schedule().__dict__}
        )

    async def _loop(self) -> None:
        while True:
            # wait in short steps: a schedule change (reload, /admin/config) takes effect at once
            while (start := self.schedule().next_start(time.time())) - time.time() > 0.25:
                await asyncio.sleep(0.25)
            await asyncio.sleep(max(0.0, start - time.time()))
            try:
                await self._window(start + self.schedule().duration_s)
            except (NotReady, PoolTimeout, asyncpg.PostgresError, OSError) as exc:
                self.windows.append({"start": start, "end": time.time(), "error": f"{type(exc).__name__}: {exc}"})
                await asyncio.sleep(0.1)

    async def _window(self, until: float) -> None:
        began = time.time()
        self.active = True
        ACTIVE.set(1)
        # one batch per slice, each its own transaction: sends stall for up to a slice at a time
        # (latency), and those queued behind a batch go through before the next one takes the locks
        slice_s = LOCK_SLICE_S
        try:
            async with self.db.connection() as conn:
                while True:  # at least one batch: the statistics are the job's work
                    now = time.time()
                    batch_end = min(until, now + slice_s)
                    async with conn.transaction():
                        await conn.execute("SELECT id FROM channels ORDER BY id FOR UPDATE")
                        while time.time() < batch_end:
                            await conn.execute(
                                "INSERT INTO maintenance_scratch (channel_id, payload)"
                                " SELECT (g % 5) + 1, md5(g::text) FROM generate_series(1, 2000) AS g"
                            )
                        await conn.execute(
                            "INSERT INTO channel_stats (channel_id, messages, updated_at)"
                            " SELECT channel_id, count(*), now() FROM messages GROUP BY channel_id"
                            " ON CONFLICT (channel_id) DO UPDATE SET messages = EXCLUDED.messages, updated_at = now()"
                        )
                    if time.time() >= until:
                        break
                await conn.execute("TRUNCATE maintenance_scratch")
                await conn.execute("CHECKPOINT")
        finally:
            self.active = False
            ACTIVE.set(0)
            WINDOWS.inc()
        self.completed += 1
        COMPLETED.inc()
        self.windows.append({"start": began, "end": time.time()})
