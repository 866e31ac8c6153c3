"""A live check's reason belongs to the episode that made it (qualify --jobs runs episodes as
threads of one process): each void record must carry its own episode's reason. No stack here: the
checks read ledgers written by the test."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

from hdrh.histogram import HdrHistogram

from arenac.model.evidence import Ledger, LedgerPhase, LedgerSecond
from arenac.model.gates import Const, Metric, Predicate
from arenac.runner import harness_adapters as adapters
from arenac.runner.clock import EpisodeClock
from arenac.runner.onsets import Onsets
from arenac.runner.records import EventLog, write_model

NOW_S = 1000.0  # plan time the episodes' clocks read at the start of a test
ERRORS_MANIFEST = Predicate(text="error_rate(send) >= 50%", left=Metric(name="error_rate", route="send"), op=">=",
                            right=Const(value=0.5, dimension="fraction"))


def _ledger(evidence: Path, failing: bool) -> None:
    """Every plan second of [0, NOW_S + 60) with 10 sends, all failing or none."""
    histogram = HdrHistogram(1, 60_000_000, 3)
    for _ in range(10):
        histogram.record_value(4000)
    hist = histogram.encode().decode("ascii")
    seconds = tuple(LedgerSecond(t=t, phase="peak", route="send", count=10, errors=10 if failing else 0, hist=hist)
                    for t in range(int(NOW_S) + 60))
    write_model(evidence / "ledger.json", Ledger(time_scale=1.0, client_timeout_s=10.0, seconds=seconds,
                                                 phases=(LedgerPhase(name="peak", start_s=0.0, end_s=NOW_S + 60),)))


def _evidence(tmp_path: Path, name: str, ledger: bool | None) -> Path:
    """An evidence directory: a ledger whose sends all fail (True), none fail (False), or none yet."""
    evidence = tmp_path / name / "evidence"
    evidence.mkdir(parents=True)
    if ledger is not None:
        _ledger(evidence, failing=ledger)
    return evidence


def test_each_live_check_returns_its_own_reason_whatever_runs_beside_it(tmp_path):
    first, second = _evidence(tmp_path, "a", None), _evidence(tmp_path, "b", False)
    checks: dict[str, adapters.LiveCheck] = {}
    first_done, second_done = threading.Event(), threading.Event()

    def one() -> None:
        checks["a"] = adapters.check_live(ERRORS_MANIFEST, first, NOW_S, 20.0)
        first_done.set()
        second_done.wait(10)  # the other episode checks after this one and before its reason is used
        checks["a, read after b"] = checks["a"]

    def other() -> None:
        first_done.wait(10)
        checks["b"] = adapters.check_live(ERRORS_MANIFEST, second, NOW_S, 20.0)
        second_done.set()

    _side_by_side([threading.Thread(target=one), threading.Thread(target=other)], timeout_s=10)
    assert not checks["a, read after b"].holds
    assert checks["a, read after b"].detail == f"no ledger yet at {first / 'ledger.json'}"
    assert not checks["b"].holds and checks["b"].detail == ("0% >= 50% does not hold; error_rate(send) = 0% "
                                                            "(0 errors / 200 requests (route send))")


def _side_by_side(threads: list[threading.Thread], timeout_s: float) -> None:
    """Start every thread, then wait for each (bounded: a hung one fails the test's asserts)."""
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)


def _episode(tmp_path: Path, name: str, evidence: Path) -> Onsets:
    """An episode's onsets, whose fault's onset and handover lie 100 plan seconds back: its
    manifestation deadline (the look-back of a hung request, 11 s, plus a real second) is over after
    one check. The predicate reads no state, so nothing is performed or snapshotted."""
    clock = EpisodeClock(1.0, zero=time.monotonic() - NOW_S)

    def unused(*_):
        raise AssertionError("a ledger-only manifestation check performs nothing and takes no snapshot")

    onsets = Onsets(clock, threading.Event(), EventLog(tmp_path / name / "events.jsonl", clock), evidence,
                    tmp_path / name, perform=unused, spawn=unused, live_snapshot=unused)
    onsets.times["pool"] = NOW_S - 100
    return onsets


def test_two_episodes_side_by_side_each_void_with_their_own_last_problem(tmp_path):
    fault = SimpleNamespace(name="pool", manifest=ERRORS_MANIFEST, manifest_within_s=5.0)
    episodes = {"no-ledger": _episode(tmp_path, "no-ledger", _evidence(tmp_path, "no-ledger", None)),
                "healthy": _episode(tmp_path, "healthy", _evidence(tmp_path, "healthy", False)),
                "failing": _episode(tmp_path, "failing", _evidence(tmp_path, "failing", True))}
    results = {}
    start = threading.Barrier(len(episodes))

    def await_manifestation(name: str) -> None:
        start.wait(10)
        results[name] = episodes[name].await_manifestation(fault, NOW_S - 100)

    _side_by_side([threading.Thread(target=await_manifestation, args=(name,)) for name in episodes], timeout_s=30)
    assert not results["no-ledger"].manifested
    assert results["no-ledger"].last_problem == f"no ledger yet at {episodes['no-ledger'].evidence / 'ledger.json'}"
    assert not results["healthy"].manifested
    assert results["healthy"].last_problem.startswith("0% >= 50% does not hold; error_rate(send) = 0% ")
    assert results["failing"].manifested and results["failing"].last_problem.startswith("100% >= 50% holds")
