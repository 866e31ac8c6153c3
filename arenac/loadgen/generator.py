"""The open-loop load generator (asyncio + aiohttp).

Contract:
- Setup first (the route client logs users in), then the clock: its zero is the generator's start
  (`Plan`, arenac/loadgen/plan.py: durations in plan seconds, rates per real second, optional
  anchoring of cycles to Unix time). The ready file, if asked for, is written then:
  {"pid", "clock_zero_unix", "time_scale", "warmup_end_s", "cycle_s"} (plan seconds).
- Open loop: every request is started at its scheduled time whatever happened to earlier ones
  (no connection limit, no waiting on answers); when the generator itself runs late it starts the
  overdue requests at once. Route choice is a seeded RNG drawn in schedule order. Latency is
  measured from the scheduled start; a request is good only with a 2xx within the client timeout,
  counted from the scheduled start, and a timed-out request is recorded at the timeout.
- The ledger (arenac/loadgen/ledger.py) is rewritten atomically every `flush_s` real seconds (with
  what has completed so far) and finally once every request has ended. The run ends when plan
  time reaches `duration_s` (None: never; `cycles=N`: the end of the warm-up and N cycles) or when
  `stop_event` is set; either way no new request is started, the ones in flight are waited for (at
  most `drain_s`, default the client timeout, so they all end on their own) and the final ledger
  is written, its phases cut where the generator stopped. `abort_event` (a second SIGTERM in
  the CLI) cuts the wait short: requests still in flight are then recorded as errors at the
  latency they had reached.
- Acknowledged writes (`acks_out`, arenac/loadgen/acks.py): the route client records every write
  answered as accepted, and every delete of its own writes it asked for (answered or not); the file
  is appended on every tick and completed with the final ledger. The client deletes no write it
  requested before `KEEP_AFTER_WARMUP_REAL_S` real seconds past the warm-up's end (the baseline
  snapshot, taken when the warm-up ends, covers those by a checksum), and an arrival of a route with
  nothing to act on yet (`call` returns None) starts no request and is not in the ledger.
- `run_load(...)` runs all that and returns a `RunSummary` (counts, start lag of the generator
  itself: how late it started requests, a measure of its own overhead). The start lag so far is in
  every ledger it writes too (`start_lag`), so the runner reads it while the generator runs.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from arenac.loadgen.acks import AckLog
from arenac.loadgen.ledger import Key, Ledger, atomic_write, new_histogram, to_micros
from arenac.loadgen.plan import Plan, make_plan
from arenac.loadgen.routes import Call, RouteClient, RouteMix, route_client
from arenac.model.evidence import StartLag
from arenac.model.library import LoadProfile
from arenac.model.loadgen import LoadgenReady

CLIENT_TIMEOUT_S = 10.0
FLUSH_S = 2.0
LIVE_FLUSH_S = 0.5
TICK_S = 0.1  # how often entries are settled and files considered for a rewrite
POLL_S = 0.05  # the longest a stop request goes unnoticed
# the runner takes the baseline snapshot (and its largest ids) when the warm-up ends; a write the
# client requested this long after that is above those ids, so deleting it leaves the checksum alone
KEEP_AFTER_WARMUP_REAL_S = 1.0


@dataclass(frozen=True)
class RunSummary:
    clock_zero_unix: float
    end_s: float  # plan time at which the generator stopped starting requests
    requests: int
    errors: int
    max_start_lag_s: float
    p99_start_lag_s: float
    started_span_s: float  # real seconds from the first request's actual start to the last one's
    error_kinds: dict[str, int]  # HTTP status, "timeout", "cut off" or the client exception's class -> count

    def line(self) -> str:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(self.error_kinds.items()))
        return (f"loadgen: {self.requests} requests, {self.errors} errors ({kinds or 'none'}), "
                f"ran to plan t={self.end_s:.1f} s; started requests late by p99 {self.p99_start_lag_s * 1000:.2f} ms, "
                f"max {self.max_start_lag_s * 1000:.2f} ms")


class Generator:
    def __init__(self, profile: LoadProfile, client: RouteClient, time_scale: float, *, duration_s: float | None,
                 out: Path, cycles: int | None = None, seed: int = 1, anchor_unix: float | None = None,
                 client_timeout_s: float = CLIENT_TIMEOUT_S, flush_s: float = FLUSH_S,
                 ready_file: Path | None = None, live_file: Path | None = None, drain_s: float | None = None,
                 stop_event: threading.Event | None = None, abort_event: threading.Event | None = None,
                 acks_out: Path | None = None) -> None:
        self.acks_out = acks_out
        self.mix = RouteMix(profile.mix)
        self.profile = profile
        self.client = client
        self.time_scale = time_scale
        self.duration_s = duration_s
        self.cycles = cycles
        self.out = Path(out)
        self.seed = seed
        self.anchor_unix = anchor_unix
        self.timeout = client_timeout_s
        self.flush_s = flush_s
        self.ready_file = ready_file
        self.live_file = live_file
        self.drain_s = client_timeout_s if drain_s is None else drain_s
        self.stop_event = stop_event or threading.Event()
        self.abort_event = abort_event or threading.Event()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._lags = new_histogram()
        self._max_lag = 0.0
        self._first_start = self._last_start = 0.0
        self._error_kinds: Counter[str] = Counter()
        self._end_s: float | None = None  # plan time at which the generator stopped starting requests

    def _ledger_end(self, ledger: Ledger) -> float:
        """Where the ledger's phases end: the stop once driving is over, else now."""
        return max(0.0, ledger.clock()) if self._end_s is None else self._end_s

    async def run(self) -> RunSummary:
        loop = asyncio.get_running_loop()
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                                         cookie_jar=aiohttp.DummyCookieJar()) as session:
            await self.client.setup(session)
            plan = make_plan(self.profile, self.time_scale, time.time(), self.anchor_unix)
            if self.cycles is not None:
                self.duration_s = plan.warmup_s + self.cycles * plan.cycle_s
            zero = loop.time() + (plan.clock_zero_unix - time.time())  # the clock zero on the loop's clock
            ledger = Ledger(plan, self.timeout, clock=lambda: (loop.time() - zero) / self.time_scale)
            if self.acks_out is not None:
                self.client.acks = AckLog(Path(self.acks_out), ledger.clock)
            self.client.clock = ledger.clock
            self.client.keep_before_s = plan.warmup_s + KEEP_AFTER_WARMUP_REAL_S / self.time_scale
            if self.ready_file is not None:
                ready = LoadgenReady(pid=os.getpid(), **plan.describe())
                atomic_write(Path(self.ready_file), json.dumps(ready.model_dump(mode="json"), sort_keys=True) + "\n")
            flusher = loop.create_task(self._flush_periodically(ledger))
            try:
                self._end_s = await self._drive(session, plan, ledger, zero)
                await self._drain(ledger)
            finally:
                flusher.cancel()
                ledger.frontier = math.inf
                ledger.settle(math.inf)
                ledger.start_lag = self._start_lag()
                ledger.write(self.out, self._ledger_end(ledger))
                if self.live_file is not None:
                    atomic_write(Path(self.live_file), ledger.live_document() + "\n")
                if self.client.acks is not None:
                    self.client.acks.flush()
        p99_lag = self._lag_at(99)
        return RunSummary(plan.clock_zero_unix, self._ledger_end(ledger), ledger.requests, ledger.errors,
                          self._max_lag, p99_lag, self._last_start - self._first_start, dict(self._error_kinds))

    def _lag_at(self, percentile: float) -> float:
        """The start lag at `percentile`, in seconds; 0 before the first start.

        The histogram reports a bucket's upper edge, which can lie just above the exact maximum
        we keep beside it; a percentile never exceeds the maximum, so it is clamped to it."""
        if not self._lags.get_total_count():
            return 0.0
        return min(self._lags.get_value_at_percentile(percentile) / 1e6, self._max_lag)

    def _start_lag(self) -> StartLag:
        """The start lag so far, for the ledger."""
        return StartLag(starts=self._lags.get_total_count(), p50_s=round(self._lag_at(50), 6),
                        p99_s=round(self._lag_at(99), 6), max_s=round(self._max_lag, 6))

    async def _sleep_until(self, loop: asyncio.AbstractEventLoop, when: float) -> bool:
        """Sleep until loop time `when`; False if a stop came first."""
        while not self.stop_event.is_set():
            delay = when - loop.time()
            if delay <= 0:
                return True
            await asyncio.sleep(min(delay, POLL_S))
        return False

    async def _drive(self, session: aiohttp.ClientSession, plan: Plan, ledger: Ledger, zero: float) -> float:
        """Start every request on time; returns the plan time at which it stopped."""
        loop = asyncio.get_running_loop()
        rng = random.Random(self.seed)
        if not await self._sleep_until(loop, zero):
            return 0.0
        for t, _phase in plan.arrivals(self.duration_s):
            ledger.frontier = t
            due = zero + t * self.time_scale
            if not await self._sleep_until(loop, due):
                return max(0.0, ledger.clock())
            self._last_start = loop.time()
            if not self._first_start:
                self._first_start = self._last_start
            lag = self._last_start - due
            self._max_lag = max(self._max_lag, lag)
            self._lags.record_value(to_micros(lag))
            route = self.mix.draw(rng)
            call = self.client.call(route, rng)
            if call is None:  # nothing for the route to act on yet: no request
                continue
            key = ledger.scheduled(t, route)
            task = loop.create_task(self._request(session, call, due, key, ledger))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
        ledger.frontier = math.inf
        if self.duration_s is None:  # no request left to start (every phase at rate 0): wait for the stop
            await self._sleep_until(loop, math.inf)
            return max(0.0, ledger.clock())
        await self._sleep_until(loop, zero + self.duration_s * self.time_scale)
        return self.duration_s

    async def _request(self, session: aiohttp.ClientSession, call: Call, due: float, key: Key, ledger: Ledger) -> None:
        loop = asyncio.get_running_loop()
        ok = timed_out = replied = False
        kind = ""
        try:
            async with asyncio.timeout_at(due + self.timeout):
                async with session.request(call.method, call.url, json=call.json, params=call.params,
                                           headers=call.headers) as response:
                    body = await response.read()
                    ok = 200 <= response.status < 300
                    kind = str(response.status)
                    replied = True
                    if call.on_reply is not None:
                        try:
                            call.on_reply(response.status, body)
                        except Exception:  # a route client's bookkeeping must not lose the request
                            pass
        except TimeoutError:
            timed_out, kind = True, "timeout"
        except (aiohttp.ClientError, OSError) as exc:
            kind = type(exc).__name__
        except asyncio.CancelledError:  # the drain was cut short: an error at the latency reached
            ok, kind = False, "cut off"
        if not replied and call.on_error is not None:  # no answer: the client cannot know what became of it
            try:
                call.on_error(kind)
            except Exception:  # a route client's bookkeeping must not lose the request
                pass
        latency = self.timeout if timed_out else loop.time() - due
        ok = ok and latency <= self.timeout
        if not ok:
            self._error_kinds[kind] += 1
        ledger.completed(key, latency, ok)

    async def _drain(self, ledger: Ledger) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.drain_s
        while self._in_flight:
            if self.abort_event.is_set() or loop.time() >= deadline:
                pending = list(self._in_flight)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                return
            await asyncio.wait(set(self._in_flight), timeout=min(POLL_S, max(0.0, deadline - loop.time())))

    async def _flush_periodically(self, ledger: Ledger) -> None:
        loop = asyncio.get_running_loop()
        next_write = loop.time() + self.flush_s
        next_live = loop.time() + LIVE_FLUSH_S
        while True:
            await asyncio.sleep(TICK_S)
            ledger.settle()
            now = loop.time()
            try:
                if self.client.acks is not None:
                    self.client.acks.flush()
                if now >= next_write:
                    ledger.start_lag = self._start_lag()
                    ledger.write(self.out, self._ledger_end(ledger))
                    next_write = now + self.flush_s
                if self.live_file is not None and now >= next_live:
                    atomic_write(Path(self.live_file), ledger.live_document() + "\n")
                    next_live = now + LIVE_FLUSH_S
            except OSError as exc:  # keep driving load; the final write will try again
                print(f"loadgen: cannot write the ledger: {exc}", file=sys.stderr)


def run_load(profile: LoadProfile, target: str, time_scale: float, duration_s: float | None, out: Path,
             stop_event: threading.Event | None = None, *, substrate: str = "spine", cycles: int | None = None,
             seed: int = 1, anchor_unix: float | None = None, client_timeout_s: float = CLIENT_TIMEOUT_S,
             flush_s: float = FLUSH_S, ready_file: Path | None = None, live_file: Path | None = None,
             drain_s: float | None = None, abort_event: threading.Event | None = None,
             client_factory: Callable[[str], RouteClient] | None = None, acks_out: Path | None = None) -> RunSummary:
    """Drive `profile` against `target` until `duration_s` plan seconds or `stop_event`; write `out`."""
    client = client_factory(target) if client_factory else route_client(substrate, target, profile.mix)
    generator = Generator(profile, client, time_scale, duration_s=duration_s, out=out, cycles=cycles, seed=seed,
                          anchor_unix=anchor_unix, client_timeout_s=client_timeout_s, flush_s=flush_s,
                          ready_file=ready_file, live_file=live_file, drain_s=drain_s,
                          stop_event=stop_event, abort_event=abort_event, acks_out=acks_out)
    return asyncio.run(generator.run())
