"""`python -m arenac.loadgen` as its own process: ready file, incremental and final ledgers on
SIGTERM, a second SIGTERM, a paused generator, a target that fails setup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenac.loadgen import LiveView, load_ledger
from arenac.model.library import LoadProfile
from loadgen.stub import StubServer, profile

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


class Proc:
    def __init__(self, tmp: Path, target: str, load: LoadProfile, *extra: str) -> None:
        self.ledger, self.ready = tmp / "ledger.json", tmp / "ready.json"
        profile_path = tmp / "profile.json"
        profile_path.write_text(load.model_dump_json())
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "arenac.loadgen", "--profile", str(profile_path), "--target", target,
             "--out", str(self.ledger), "--ready-file", str(self.ready), "--substrate", "plain", *extra],
            stderr=subprocess.PIPE, text=True)

    def wait_ready(self, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while not self.ready.exists():
            assert self.popen.poll() is None, self.popen.communicate()[1]
            assert time.monotonic() < deadline, "no ready file"
            time.sleep(0.02)
        return json.loads(self.ready.read_text())

    def wait(self, timeout: float) -> tuple[int, str]:
        _, err = self.popen.communicate(timeout=timeout)
        return self.popen.returncode, err

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.communicate(timeout=10)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator:
    started: list[Proc] = []

    def make(target: str, load: LoadProfile, *extra: str) -> Proc:
        proc = Proc(tmp_path, target, load, *extra)
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.kill()


def test_sigterm_writes_the_final_ledger(stub: StubServer, spawn, tmp_path: Path) -> None:
    live = tmp_path / "live.json"
    proc = spawn(stub.url, profile([("steady", 5, 40)], {"ok": 1}), "--flush-s", "1", "--live-file", str(live))
    ready = proc.wait_ready()
    assert set(ready) == {"pid", "clock_zero_unix", "time_scale", "warmup_end_s", "cycle_s"}
    assert ready["pid"] == proc.popen.pid and abs(ready["clock_zero_unix"] - time.time()) < 5
    deadline = time.monotonic() + 10
    while not proc.ledger.exists():  # rewritten while running: first after a second
        assert time.monotonic() < deadline, "no interim ledger"
        time.sleep(0.02)
    interim = json.loads(proc.ledger.read_text())
    interim_count = sum(e["count"] for e in interim["seconds"])
    assert interim_count > 0
    time.sleep(0.6)
    view = LiveView.read(live)  # the live view another process (the runner) reads
    assert view.now > 0.5 and view.current(5).error_rate == 0 and 0 < view.current(5).p99_s < 0.5
    proc.popen.send_signal(signal.SIGTERM)
    stopped_at = time.time()
    code, err = proc.wait(timeout=15)
    assert code == 0, err
    ledger = load_ledger(proc.ledger)
    end_s = ledger["phases"][-1]["end_s"]
    assert end_s == pytest.approx(stopped_at - ready["clock_zero_unix"], abs=0.2)  # no duration: ran until SIGTERM
    count = sum(e["count"] for e in ledger["seconds"])
    assert count > interim_count and count == pytest.approx(40 * end_s, abs=2)
    assert sum(e["errors"] for e in ledger["seconds"]) == 0
    assert all(e["hist"].get_total_count() == e["count"] for e in ledger["seconds"])
    assert "loadgen:" in err


def test_a_second_sigterm_cuts_the_drain_short(stub: StubServer, spawn) -> None:
    proc = spawn(stub.url, profile([("steady", 5, 20)], {"hang": 1}), "--client-timeout-s", "30")
    proc.wait_ready()
    time.sleep(0.5)
    proc.popen.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.popen.send_signal(signal.SIGTERM)
    code, err = proc.wait(timeout=10)  # not the 30 s the hanging requests would take
    assert code == 0, err
    ledger = load_ledger(proc.ledger)
    count = sum(e["count"] for e in ledger["seconds"])
    assert count >= 8 and sum(e["errors"] for e in ledger["seconds"]) == count  # cut off: errors
    assert f"cut off: {count}" in err
    assert max(e["hist"].get_max_value() for e in ledger["seconds"]) < 5_000_000  # at the latency reached


def test_a_paused_generator_counts_the_pause_as_latency(stub: StubServer, spawn) -> None:
    """No coordinated omission on the client side either: while the generator itself cannot run,
    its requests are late, and their latency counts from when they were due."""
    proc = spawn(stub.url, profile([("steady", 3, 100)], {"ok": 1}), "--duration-s", "3")
    ready = proc.wait_ready()
    time.sleep(max(0.0, ready["clock_zero_unix"] + 1.0 - time.time()))
    os.kill(proc.popen.pid, signal.SIGSTOP)
    time.sleep(0.5)
    os.kill(proc.popen.pid, signal.SIGCONT)
    code, err = proc.wait(timeout=15)
    assert code == 0, err
    ledger = load_ledger(proc.ledger)
    assert {e["t"]: e["count"] for e in ledger["seconds"]} == {0: 100, 1: 100, 2: 100}
    late = next(e["hist"] for e in ledger["seconds"] if e["t"] == 1)
    assert late.get_max_value() >= 400_000
    assert late.get_value_at_percentile(60) >= 50_000  # about half of that second was due in the pause


def test_a_target_that_fails_setup_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    profile_path = tmp_path / "profile.json"
    profile_path.write_text(json.dumps({"profile": profile([("p", 1, 1)], {"send": 1}).model_dump(mode="json")}))
    result = subprocess.run([sys.executable, "-m", "arenac.loadgen", "--profile", str(profile_path),
                             "--target", "http://127.0.0.1:9", "--out", str(tmp_path / "ledger.json")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "cannot log ada in" in result.stderr
    assert not (tmp_path / "ledger.json").exists()
