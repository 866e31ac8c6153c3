"""The client-side ledger of a load run (docs/evidence.md, `ledger.json`) and its live view.

Contract:
- `Ledger.scheduled(t, route)` is called when a request is started (t: its scheduled plan time),
  `Ledger.completed(key, latency_s, ok)` when it ends: latency from the *scheduled* start, `ok`
  only for a 2xx within the client timeout; a timed-out request is recorded at exactly the
  timeout. Latencies go into the (whole plan second of the schedule, route) entry, whose phase is
  the phase at the second's start, and into a bucket of the second it *completed* in (the live
  view, below).
- An entry is *settled* once its second is over, every request of it has been started (the
  generator keeps `frontier` at the next unstarted request's plan time) and none is in flight; it
  is then encoded once (HdrHistogram 1 us .. 60 s, 3 digits, `encode()` as ASCII) and its raw
  latencies dropped, so a long run costs little memory and a rewrite only re-encodes unsettled
  entries. A second straddling a phase boundary (only with fractional phase durations) counts
  for the phase it starts in.
- `document(end_s)` is the ledger JSON (sorted keys), of the shape `arenac.model.evidence.Ledger`:
  each settled entry is a `LedgerSecond` serialised once, the phases and the start lag are their
  models at every write; the document is joined from those parts (never a whole Ledger model, which
  would validate every second at every write). `phases` are the plan's phases that started
  before `end_s`, the last cut at `end_s`; `seconds` every entry with at least one completed
  request, sorted by (t, route). Written mid-run it holds what has completed so far (an entry of
  a second still in progress holds its completed requests); the final document, written after
  every request has ended, holds all of them.
- Live view: `current(window_s) -> Live(error_rate, p99_s)` over the requests that *completed*
  in the last `window_s` plan seconds (whole completion seconds; at most `LIVE_KEEP_S`); (0, 0)
  when none did. A request that hangs shows up when it times out. `live_document()` carries the
  same buckets to another process (`LiveView.read(path).current(window_s)`).
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import os
import time
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from hdrh.histogram import HdrHistogram

from arenac.loadgen.plan import Plan
from arenac.model.evidence import LedgerPhase, LedgerSecond, StartLag
from arenac.model.loadgen import LiveBucket, LiveDocument

LOWEST_US, HIGHEST_US, DIGITS = 1, 60_000_000, 3
LIVE_KEEP_S = 60
_EPS = 1e-9

Key = tuple[int, str]  # (plan second, route)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def decode_histogram(encoded: str) -> HdrHistogram:
    return HdrHistogram.decode(encoded)


def to_micros(latency_s: float) -> int:
    return min(HIGHEST_US, max(LOWEST_US, round(latency_s * 1e6)))


def second_of(t: float) -> int:
    """The whole plan second a plan time belongs to (robust to 29.9999999 for 30)."""
    return math.floor(t + _EPS)


class Live(NamedTuple):
    error_rate: float
    p99_s: float


class _Cell:
    """Counts and raw latencies (us) of one ledger entry or one live bucket."""

    __slots__ = ("_encoded", "count", "errors", "latencies", "pending")

    def __init__(self) -> None:
        self.count = self.errors = self.pending = 0
        self.latencies = array("q")
        self._encoded: str | None = None

    def record(self, latency_us: int, ok: bool) -> None:
        self.count += 1
        self.errors += 0 if ok else 1
        self.latencies.append(latency_us)
        self._encoded = None

    def histogram(self) -> HdrHistogram:
        hist = new_histogram()
        for value in self.latencies:
            hist.record_value(value)
        return hist

    def encode(self) -> str:
        if self._encoded is None:
            self._encoded = self.histogram().encode().decode("ascii")
        return self._encoded


class LiveView:
    """Completion buckets (plan second -> count, errors, histogram) as of plan time `now`."""

    def __init__(self, now: float, buckets: Iterable[tuple[int, int, int, HdrHistogram]], in_flight: int = 0) -> None:
        self.now = now
        self.buckets = sorted(buckets, key=lambda bucket: bucket[0])
        self.in_flight = in_flight

    @classmethod
    def read(cls, path: Path) -> LiveView:
        """live.json as `live_document` wrote it (a LiveDocument); ValueError when it is not one."""
        document = LiveDocument.model_validate_json(Path(path).read_bytes())
        return cls(document.t, [(b.t, b.count, b.errors, decode_histogram(b.hist)) for b in document.buckets],
                   document.in_flight)

    def current(self, window_s: float) -> Live:
        count = errors = 0
        merged = new_histogram()
        for second, n, e, hist in self.buckets:
            if second + 1 > self.now - window_s:
                count, errors = count + n, errors + e
                merged.add(hist)
        if count == 0:
            return Live(0.0, 0.0)
        return Live(errors / count, merged.get_value_at_percentile(99) / 1e6)


class Ledger:
    def __init__(self, plan: Plan, client_timeout_s: float, clock: Callable[[], float] | None = None) -> None:
        self.plan = plan
        self.client_timeout_s = client_timeout_s
        self.clock = clock or (lambda: (time.time() - plan.clock_zero_unix) / plan.time_scale)
        self._open: dict[Key, _Cell] = {}
        self._settled: dict[Key, str] = {}  # key -> JSON fragment of the entry
        self._settled_keys: list[Key] = []
        self._phase_of: dict[int, str] = {}
        self._live: dict[int, _Cell] = {}
        self.frontier = math.inf  # plan time of the next request not started yet (set by the generator)
        self.in_flight = 0
        self.requests = 0
        self.errors = 0
        # how late the generator itself started requests so far (set by it before each write): a
        # starved harness shows here first (docs/evidence.md, runner/headroom.py)
        self.start_lag: StartLag | None = None

    # -- recording ---------------------------------------------------------------------------
    def scheduled(self, t: float, route: str) -> Key:
        key = (second_of(t), route)
        cell = self._open.get(key)
        if cell is None:
            if key in self._settled:  # cannot happen while requests are started in schedule order
                raise RuntimeError(f"request scheduled into settled second {key}")
            cell = self._open[key] = _Cell()
        cell.pending += 1
        self.in_flight += 1
        return key

    def completed(self, key: Key, latency_s: float, ok: bool) -> None:
        cell = self._open[key]
        cell.pending -= 1
        self.in_flight -= 1
        self.requests += 1
        self.errors += 0 if ok else 1
        micros = to_micros(latency_s)
        cell.record(micros, ok)
        now = second_of(self.clock())
        bucket = self._live.get(now)
        if bucket is None:
            bucket = self._live[now] = _Cell()
            for old in [s for s in self._live if s < now - LIVE_KEEP_S]:
                del self._live[old]
        bucket.record(micros, ok)

    def settle(self, now: float | None = None) -> int:
        """Encode the entries whose second is over and nothing in flight; returns how many."""
        now = min(self.clock() if now is None else now, self.frontier)
        done = [key for key, cell in self._open.items() if cell.pending == 0 and key[0] + 1 <= now + _EPS]
        for key in done:
            cell = self._open.pop(key)
            if cell.count:
                self._settled[key] = self._fragment(key, cell)
                bisect.insort(self._settled_keys, key)
        return len(done)

    # -- the ledger document -----------------------------------------------------------------
    def _phase(self, second: int) -> str:
        phase = self._phase_of.get(second)
        if phase is None:
            phase = self._phase_of[second] = self.plan.phase_at(second)
        return phase

    def _fragment(self, key: Key, cell: _Cell) -> str:
        # once per settled entry (and per write for the few still open), never per request
        entry = LedgerSecond(t=key[0], route=key[1], phase=self._phase(key[0]), count=cell.count,
                             errors=cell.errors, hist=cell.encode())
        return json.dumps(entry.model_dump(mode="json"), sort_keys=True)

    def document(self, end_s: float) -> str:
        phases = [LedgerPhase(name=p.name, start_s=round(p.start_s, 6), end_s=round(p.end_s, 6))
                  for p in self.plan.phases_until(end_s)]
        head = {
            "client_timeout_s": self.client_timeout_s,
            "phases": [phase.model_dump(mode="json") for phase in phases],
            "profile": self.plan.profile.model_dump(mode="json"),
        }
        open_keys = sorted(key for key, cell in self._open.items() if cell.count)
        fragments = heapq.merge(
            ((key, self._settled[key]) for key in self._settled_keys),
            ((key, self._fragment(key, self._open[key])) for key in open_keys),
        )
        seconds = ", ".join(fragment for _, fragment in fragments)
        lag = "" if self.start_lag is None else ', "start_lag": ' + json.dumps(self.start_lag.model_dump(mode="json"),
                                                                                sort_keys=True)
        # keys in sorted order: client_timeout_s, phases, profile | seconds | start_lag | time_scale
        return (json.dumps(head, sort_keys=True)[:-1] + f', "seconds": [{seconds}]{lag}, "time_scale": '
                + json.dumps(self.plan.time_scale) + "}")

    def write(self, path: Path, end_s: float) -> None:
        atomic_write(Path(path), self.document(end_s) + "\n")

    # -- the live view -----------------------------------------------------------------------
    def live(self) -> LiveView:
        buckets = [(second, cell.count, cell.errors, cell.histogram()) for second, cell in self._live.items()]
        return LiveView(self.clock(), buckets, self.in_flight)

    def current(self, window_s: float) -> Live:
        return self.live().current(window_s)

    def live_document(self) -> str:
        """live.json (a LiveDocument): built at each live write (a few a second, at most
        LIVE_KEEP_S buckets), never per request."""
        document = LiveDocument(t=round(self.clock(), 6), in_flight=self.in_flight, time_scale=self.plan.time_scale,
                                buckets=tuple(LiveBucket(t=second, count=cell.count, errors=cell.errors,
                                                         hist=cell.encode())
                                              for second, cell in sorted(self._live.items())))
        return json.dumps(document.model_dump(mode="json"), sort_keys=True)


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old or the new file, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def load_ledger(path: Path) -> dict[str, Any]:
    """A ledger.json with every `hist` decoded into an HdrHistogram (for checks and tools)."""
    data: dict[str, Any] = json.loads(Path(path).read_text())
    for entry in data["seconds"]:
        entry["hist"] = decode_histogram(entry["hist"])
    return data
