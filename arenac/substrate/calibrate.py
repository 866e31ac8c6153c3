"""`arenac calibrate`: drive the standard load profile against healthy spine stacks and record the baseline.

Contract:
- The load generator is open-loop: within each phase requests start at fixed intervals (1/rate),
  whatever the latency of earlier ones, each request picks its route by the profile's weighted mix
  (a seeded RNG, so runs are comparable) and is made by spine's route client, the one an episode's
  load generator uses (a `delete` removes one of the client's own acknowledged sends; an arrival
  with nothing to delete yet sends nothing). It logs every user in before the clock starts (setup,
  not measured). A request counts as good when it returns 2xx within the client timeout (10 s).
- Per route and phase it records p50/p95/p99 latency (over every request, errors included),
  error rate and goodput (good requests per second of the phase's time). Phases of the same name
  (the two peaks) are pooled.
- `calibrate()` runs the profile `runs` times, each against a fresh healthy stack, and writes the
  per-run medians with their spread (min, max) across runs, so a gate author sees how noisy each
  figure is. The JSON has sorted keys and no timestamps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from arenac.loadgen.routes import Call, RouteMix
from arenac.model.library import LoadProfile
from arenac.substrate.spine.profile import CALIBRATION_CYCLES, ScheduledPhase, describe, schedule
from arenac.substrate.spine.routes import SpineClient
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack

CLIENT_TIMEOUT_S = 10.0
ALL = "all"


@dataclass(frozen=True)
class Sample:
    route: str
    phase: str
    latency_s: float
    status: int  # HTTP status, 0 for a transport error or timeout

    @property
    def good(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True)
class RouteStats:
    requests: int
    error_rate: float
    goodput_rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float

    @classmethod
    def of(cls, samples: list[Sample], seconds: float) -> RouteStats:
        latencies = sorted(s.latency_s * 1000 for s in samples)
        good = sum(1 for s in samples if s.good)
        return cls(
            requests=len(samples),
            error_rate=round(1 - good / len(samples), 5) if samples else 0.0,
            goodput_rps=round(good / seconds, 3) if seconds > 0 else 0.0,
            p50_ms=_percentile(latencies, 50),
            p95_ms=_percentile(latencies, 95),
            p99_ms=_percentile(latencies, 99),
        )


def _percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile, in the unit of the values, rounded to 0.1."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return round(sorted_values[int(rank) - 1], 1)


@dataclass
class RunResult:
    samples: list[Sample] = field(default_factory=list)
    phase_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    max_start_lag_s: float = 0.0  # how late the generator started a request (it is CPU-bound too)

    def summary(self) -> dict[str, dict[str, RouteStats]]:
        """route -> phase -> stats, with `all` rows over routes and over measured phases."""
        by_key: dict[tuple[str, str], list[Sample]] = defaultdict(list)
        measured = [p for p in self.phase_seconds if p != "warmup"]
        for sample in self.samples:
            by_key[(sample.route, sample.phase)].append(sample)
            by_key[(ALL, sample.phase)].append(sample)
            if sample.phase in measured:
                by_key[(sample.route, ALL)].append(sample)
                by_key[(ALL, ALL)].append(sample)
        seconds = {**self.phase_seconds, ALL: sum(self.phase_seconds[p] for p in measured)}
        out: dict[str, dict[str, RouteStats]] = defaultdict(dict)
        for (route, phase), samples in sorted(by_key.items()):
            out[route][phase] = RouteStats.of(samples, seconds[phase])
        return dict(out)


class LoadGenerator:
    """Open-loop requests against a spine gateway, each made by spine's own route client (the load
    generator's: arenac/substrate/spine/routes.py), so a calibrated route is issued exactly as an
    episode issues it, `delete` included (a delete of one of the client's own acknowledged sends;
    none while it has none, and then nothing is recorded for that arrival)."""

    def __init__(self, gateway: str, profile: LoadProfile, time_scale: float,
                 cycles: int = CALIBRATION_CYCLES, seed: int = 1) -> None:
        self.profile = profile
        self.time_scale = time_scale
        self.cycles = cycles
        self.rng = random.Random(seed)
        self.client = SpineClient(gateway)
        unknown = sorted(set(profile.mix) - self.client.routes)
        if unknown:
            raise ValueError(f"spine has no route {', '.join(unknown)}; profile {profile.name!r} names it in its mix")
        self._mix = RouteMix(dict(profile.mix))  # weights may be fractional

    async def run(self) -> RunResult:
        result = RunResult()
        timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
            await self.client.setup(session)
            phases = schedule(self.profile, time.time(), self.time_scale, self.cycles)
            tasks: list[asyncio.Task[None]] = []
            for phase in phases:
                result.phase_seconds[phase.name] += phase.duration_s
                await self._drive(session, phase, result, tasks)
            await asyncio.gather(*tasks)
        return result

    async def _drive(self, session: aiohttp.ClientSession, phase: ScheduledPhase,
                     result: RunResult, tasks: list[asyncio.Task[None]]) -> None:
        count = int(phase.duration_s * phase.rate_rps)
        for i in range(count):
            due = phase.start + i / phase.rate_rps
            delay = due - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                result.max_start_lag_s = max(result.max_start_lag_s, -delay)
            # every random choice is made here, in schedule order (route, then the client's user and
            # channel), so a seed gives the same requests
            route = self._mix.draw(self.rng)
            call = self.client.call(route, self.rng)
            if call is not None:
                tasks.append(asyncio.create_task(self._request(session, route, call, phase.name, result)))
        end = phase.start + phase.duration_s
        if end > time.time():
            await asyncio.sleep(end - time.time())

    async def _request(self, session: aiohttp.ClientSession, route: str, call: Call, phase: str,
                       result: RunResult) -> None:
        started = time.perf_counter()
        status, body, kind = 0, b"", ""
        try:
            async with session.request(call.method, call.url, json=call.json, params=call.params,
                                       headers=call.headers) as response:
                body = await response.read()
                status = response.status
        except TimeoutError:
            kind = "timeout"
        except (aiohttp.ClientError, OSError) as exc:
            kind = type(exc).__name__
        latency = time.perf_counter() - started
        # the client's bookkeeping, as the load generator does it (a send joins the client's own
        # messages, a delete takes one away); it never loses the request
        with contextlib.suppress(Exception):
            if status and call.on_reply is not None:
                call.on_reply(status, body)
            elif not status and call.on_error is not None:
                call.on_error(kind)
        result.samples.append(Sample(route, phase, latency, status))


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def aggregate(runs: list[RunResult], profile: LoadProfile, time_scale: float,
              cycles: int = CALIBRATION_CYCLES) -> dict[str, Any]:
    """The baseline record: for every route/phase figure, the median over runs and its spread."""
    summaries = [run.summary() for run in runs]
    routes: dict[str, dict[str, dict[str, Any]]] = {}
    for route in sorted({r for s in summaries for r in s}):
        routes[route] = {}
        for phase in sorted({p for s in summaries for p in s.get(route, {})}):
            per_run = [s[route][phase] for s in summaries if phase in s.get(route, {})]
            figures = {name: _spread([getattr(stats, name) for stats in per_run])
                       for name in ("p50_ms", "p95_ms", "p99_ms", "error_rate", "goodput_rps")}
            routes[route][phase] = {
                **{name: spread["median"] for name, spread in figures.items()},
                "requests": sum(stats.requests for stats in per_run),
                "spread": figures,
            }
    overall = routes.get(ALL, {}).get(ALL, {})
    return {
        "substrate": "spine",
        "generated_by": "arenac calibrate",
        "profile": describe(profile, time_scale, cycles),
        "runs": len(runs),
        "client_timeout_s": CLIENT_TIMEOUT_S,
        "latency_over": "every request, errors included; ms",
        "goodput_rps": overall.get("goodput_rps", 0.0),
        "error_rate": overall.get("error_rate", 0.0),
        "max_start_lag_s": round(max(run.max_start_lag_s for run in runs), 3),
        "machine": {"cpus": _cpus(), "python": platform.python_version()},
        "routes": routes,
    }


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_once(profile: LoadProfile, time_scale: float, spec: SpineSpec, data_dir: Path, seed: int) -> RunResult:
    with SpineStack(data_dir, spec) as stack:
        assert stack.endpoints is not None
        return asyncio.run(LoadGenerator(stack.endpoints.gateway, profile, time_scale, seed=seed).run())


def calibrate(profile: LoadProfile, runs: int = 3, time_scale: float = 1.0, out: Path | None = None,
              work_dir: Path | None = None) -> dict[str, Any]:
    """Run the profile (`arenac calibrate` passes the library's `spine.standard`) `runs` times,
    each on a fresh healthy stack; write and return the baseline."""
    spec = SpineSpec.from_values({"timeScale": str(time_scale)})
    results = []
    with tempfile.TemporaryDirectory(prefix="spine-calibrate-", dir=work_dir) as tmp:
        for index in range(runs):
            results.append(run_once(profile, time_scale, spec, Path(tmp) / f"run{index}", seed=index + 1))
    baseline = aggregate(results, profile, time_scale)
    if out is not None:
        out.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")
    return baseline
