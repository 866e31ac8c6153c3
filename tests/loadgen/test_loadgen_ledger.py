"""The ledger: the format of docs/evidence.md round-trips, settling, and the live view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from arenac.loadgen.ledger import Ledger, LiveView, load_ledger
from arenac.loadgen.plan import make_plan
from arenac.model.library import LoadProfile
from loadgen.stub import profile

PROFILE = profile([("peak", 2, 100), ("trough", 2, 10)], {"a": 1, "b": 1}, warmup=(1, 10))


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_ledger(timeout: float = 10.0) -> tuple[Ledger, Clock]:
    clock = Clock()
    return Ledger(make_plan(PROFILE, 0.5, now_unix=1000.0), timeout, clock), clock


def test_ledger_round_trip(tmp_path: Path) -> None:
    ledger, clock = make_ledger()
    # second 1 (peak), route a: 100 requests of 1..100 ms, the last 5 errors; second 0 (warm-up), route b: 2
    for ms in range(1, 101):
        key = ledger.scheduled(1 + ms / 200, "a")
        ledger.completed(key, ms / 1000, ok=ms <= 95)
    for t in (0.0, 0.99):
        ledger.completed(ledger.scheduled(t, "b"), 0.004, ok=True)
    ledger.completed(ledger.scheduled(3.0, "a"), 12.5, ok=False)  # a trough second
    clock.t = 10
    ledger.settle()
    out = tmp_path / "ledger.json"
    ledger.write(out, end_s=3.5)
    text = out.read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, sort_keys=True) + "\n"  # canonical: sorted keys
    assert set(doc) == {"client_timeout_s", "phases", "profile", "seconds", "time_scale"}
    assert doc["time_scale"] == 0.5 and doc["client_timeout_s"] == 10.0
    assert LoadProfile.model_validate(doc["profile"]) == PROFILE
    assert doc["phases"] == [{"name": "warmup", "start_s": 0.0, "end_s": 1.0},
                             {"name": "peak", "start_s": 1.0, "end_s": 3.0},
                             {"name": "trough", "start_s": 3.0, "end_s": 3.5}]
    rows = [(e["t"], e["route"], e["phase"], e["count"], e["errors"]) for e in doc["seconds"]]
    assert rows == [(0, "b", "warmup", 2, 0), (1, "a", "peak", 100, 5), (3, "a", "trough", 1, 1)]
    assert all(set(e) == {"t", "phase", "route", "count", "errors", "hist"} for e in doc["seconds"])
    hist = HdrHistogram.decode(doc["seconds"][1]["hist"])  # what a verifier does with it
    assert hist.get_total_count() == 100
    assert hist.get_value_at_percentile(50) == pytest.approx(50_000, rel=1e-3)
    assert hist.get_value_at_percentile(99) == pytest.approx(99_000, rel=1e-3)
    assert hist.get_max_value() == pytest.approx(100_000, rel=1e-3)
    assert hist.get_min_value() == pytest.approx(1000, rel=1e-3)
    decoded = load_ledger(out)
    assert decoded["seconds"][2]["hist"].get_max_value() == pytest.approx(12_500_000, rel=1e-3)


def test_entries_settle_only_when_their_second_is_over_and_nothing_is_in_flight(tmp_path: Path) -> None:
    ledger, clock = make_ledger()
    slow = ledger.scheduled(1.2, "a")
    ledger.completed(ledger.scheduled(1.5, "a"), 0.002, ok=True)
    clock.t = 5
    ledger.frontier = 1.9  # a request of second 1 is not started yet
    assert ledger.settle() == 0
    ledger.frontier = float("inf")
    assert ledger.settle() == 0  # one still in flight
    out = tmp_path / "ledger.json"
    ledger.write(out, end_s=5)  # mid-run: what has completed so far
    assert [(e["t"], e["count"]) for e in json.loads(out.read_text())["seconds"]] == [(1, 1)]
    ledger.completed(slow, 3.0, ok=False)
    assert ledger.settle() == 1
    ledger.write(out, end_s=5)
    [entry] = json.loads(out.read_text())["seconds"]
    assert (entry["count"], entry["errors"]) == (2, 1)
    assert HdrHistogram.decode(entry["hist"]).get_max_value() == pytest.approx(3_000_000, rel=1e-3)


def test_latencies_outside_the_histogram_range_are_clamped() -> None:
    ledger, clock = make_ledger()
    ledger.completed(ledger.scheduled(0.1, "a"), 0.0, ok=True)
    ledger.completed(ledger.scheduled(0.2, "a"), 120.0, ok=False)
    clock.t = 1
    ledger.settle()
    hist = load_ledger_from(ledger)["seconds"][0]["hist"]
    assert hist.get_min_value() == 1 and hist.get_max_value() == pytest.approx(60_000_000, rel=1e-3)


def load_ledger_from(ledger: Ledger) -> dict:
    doc = json.loads(ledger.document(end_s=1))
    for entry in doc["seconds"]:
        entry["hist"] = HdrHistogram.decode(entry["hist"])
    return doc


def test_live_view_counts_what_completed_in_the_window(tmp_path: Path) -> None:
    ledger, clock = make_ledger()
    assert ledger.current(5) == (0.0, 0.0)  # nothing completed yet
    clock.t = 0.5
    for _ in range(50):
        ledger.completed(ledger.scheduled(0.4, "a"), 2.0, ok=False)  # old: outside a 3 s window at t=10
    clock.t = 8.2
    for index in range(100):
        ledger.completed(ledger.scheduled(8.0, "b"), 0.001 * (index + 1), ok=index < 90)
    clock.t = 10.0
    error_rate, p99_s = ledger.current(3)
    assert error_rate == pytest.approx(0.10)
    assert p99_s == pytest.approx(0.099, rel=1e-3)
    assert ledger.current(30).error_rate == pytest.approx(60 / 150)
    live = tmp_path / "live.json"
    live.write_text(ledger.live_document())
    view = LiveView.read(live)
    assert view.current(3) == ledger.current(3) and view.current(30) == ledger.current(30)
    assert view.now == 10.0 and view.in_flight == 0
