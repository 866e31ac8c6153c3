"""The generator end to end against the stub server: rates per phase and the time scale, no
coordinated omission under a server stall, errors and timeouts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from arenac.loadgen import load_ledger, run_load
from arenac.loadgen.ledger import new_histogram
from loadgen.stub import StubServer, profile

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def per_second(ledger: dict) -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in ledger["seconds"]:
        out[entry["t"]] = out.get(entry["t"], 0) + entry["count"]
    return out


def test_rates_per_phase_and_the_time_scale_compresses_phases(stub: StubServer, tmp_path: Path) -> None:
    load = profile([("peak", 2, 100), ("trough", 2, 20)], {"ok": 3, "slow": 1}, warmup=(1, 40))
    started = time.monotonic()
    summary = run_load(load, stub.url, 0.5, 5.0, tmp_path / "ledger.json", substrate="plain")
    wall = time.monotonic() - started
    assert 2.4 <= wall < 4.5  # 5 plan seconds at time scale 0.5 (plus setup and drain), not 5 s
    ledger = load_ledger(tmp_path / "ledger.json")
    assert [(p["name"], p["start_s"], p["end_s"]) for p in ledger["phases"]] == [
        ("warmup", 0, 1), ("peak", 1, 3), ("trough", 3, 5)]
    # rates are per real second: a plan second (0.5 s) of peak holds 100 * 0.5 requests
    assert per_second(ledger) == {0: 20, 1: 50, 2: 50, 3: 10, 4: 10}
    assert {(e["t"], e["phase"]) for e in ledger["seconds"]} >= {(0, "warmup"), (1, "peak"), (3, "trough")}
    assert {e["route"] for e in ledger["seconds"]} == {"ok", "slow"}
    assert summary.requests == 140 and summary.errors == 0 and stub.requests == 140
    assert all(e["hist"].get_total_count() == e["count"] for e in ledger["seconds"])
    # the generator's own start lag, in the ledger as in the summary (the runner's headroom reads it)
    lag = ledger["start_lag"]
    assert lag["starts"] == 140 and lag["max_s"] == round(summary.max_start_lag_s, 6)
    assert 0 <= lag["p50_s"] <= lag["p99_s"] <= lag["max_s"]
    assert lag["p99_s"] == pytest.approx(summary.p99_start_lag_s, abs=1e-6)
    slow = new_histogram()
    for entry in ledger["seconds"]:
        if entry["route"] == "slow":
            slow.add(entry["hist"])
    assert slow.get_min_value() >= 50_000  # /slow answers after 50 ms


def test_requests_scheduled_during_a_server_stall_show_the_stall(stub: StubServer, tmp_path: Path) -> None:
    stub.stall(after_s=1.0, for_s=1.0)  # the server answers nothing from 1 s to 2 s after the first request
    load = profile([("steady", 3, 50)], {"ok": 1})
    run_load(load, stub.url, 1.0, 3.0, tmp_path / "ledger.json", substrate="plain")
    ledger = load_ledger(tmp_path / "ledger.json")
    assert per_second(ledger) == {0: 50, 1: 50, 2: 50}  # the schedule went on during the stall
    hist = {e["t"]: e["hist"] for e in ledger["seconds"]}
    # a request scheduled at 1 + x waits 1 - x: latencies spread evenly over (0, 1 s]
    stalled = hist[1]
    assert stalled.get_max_value() >= 900_000
    assert 0.35e6 <= stalled.get_value_at_percentile(50) <= 0.65e6
    assert stalled.get_value_at_percentile(10) <= 0.25e6 and stalled.get_value_at_percentile(90) >= 0.75e6
    assert hist[0].get_value_at_percentile(99) < 300_000 and hist[2].get_value_at_percentile(99) < 300_000


def test_timeouts_and_failures_count_as_errors(stub: StubServer, tmp_path: Path) -> None:
    load = profile([("steady", 1, 90)], {"ok": 1, "fail": 1, "hang": 1})
    started = time.monotonic()
    summary = run_load(load, stub.url, 1.0, 1.0, tmp_path / "ledger.json", substrate="plain", client_timeout_s=0.3)
    assert time.monotonic() - started < 5  # the last hanging request ends at its timeout
    ledger = load_ledger(tmp_path / "ledger.json")
    assert ledger["client_timeout_s"] == 0.3
    by_route: dict[str, list[dict]] = {}
    for entry in ledger["seconds"]:
        by_route.setdefault(entry["route"], []).append(entry)
    [ok], [fail], [hang] = by_route["ok"], by_route["fail"], by_route["hang"]
    assert ok["errors"] == 0 and ok["count"] > 10
    assert fail["errors"] == fail["count"] > 10
    assert hang["errors"] == hang["count"] > 10
    # timed-out requests are in the histogram, at the timeout
    assert hang["hist"].get_min_value() == pytest.approx(300_000, rel=1e-3)
    assert hang["hist"].get_max_value() == pytest.approx(300_000, rel=1e-3)
    assert summary.requests == 90 and summary.error_kinds == {"500": fail["count"], "timeout": hang["count"]}
