"""A stub HTTP server on loopback, run in a thread of the test process with its own event loop,
and `profile()`, a small LoadProfile builder.

The stub answers `GET /ok` (200), `/fail` (500), `/slow` (200 after 50 ms) and `/hang` (never, until
the client gives up). `stall(after_s, for_s)` makes every request that arrives between `after_s` and
`after_s + for_s` seconds after the first request wait until the stall ends: a server-wide pause.
"""

from __future__ import annotations

import asyncio
import threading
import time

from aiohttp import web

from arenac.model.library import LoadProfile, Phase


class StubServer:
    def __init__(self) -> None:
        self.url = ""
        self.requests = 0
        self._first: float | None = None
        self._stall: tuple[float, float] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def stall(self, after_s: float, for_s: float) -> None:
        self._stall = (after_s, for_s)

    async def _handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        self.requests += 1
        if self._first is None:
            self._first = now
        if self._stall is not None:
            start = self._first + self._stall[0]
            end = start + self._stall[1]
            if start <= now < end:
                await asyncio.sleep(end - now)
        name = request.match_info["name"]
        if name == "hang":
            await asyncio.sleep(3600)
        if name == "slow":
            await asyncio.sleep(0.05)
        return web.Response(status=500 if name == "fail" else 200, text=name)

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_get("/{name}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)

    async def _shut_down(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        # handlers still waiting (`/hang`, a stall) outlive cleanup's short grace; a loop closed
        # with them pending prints "Task was destroyed but it is pending!" at the end of the run
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shut_down(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "stub server thread did not stop"
        self._loop.close()


def profile(phases: list[tuple[str, float, float]], mix: dict[str, float],
            warmup: tuple[float, float] | None = None) -> LoadProfile:
    """A LoadProfile from (name, duration_s, rate) triples; warmup as (duration_s, rate)."""
    return LoadProfile(
        name="test",
        warmup=Phase(name="warmup", duration_s=warmup[0], rate=warmup[1]) if warmup else None,
        phases=tuple(Phase(name=name, duration_s=duration, rate=rate) for name, duration, rate in phases),
        mix=mix,
    )
