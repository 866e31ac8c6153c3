"""`arenac substrate up/status` and `arenac calibrate` as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from arenac.substrate.spine.stack import Endpoints
from substrate.spine_client import assert_gone, http, ports_of, stop_command

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

ARENAC = [sys.executable, "-m", "arenac.cli"]


def arenac(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARENAC, *args], capture_output=True, text=True, timeout=timeout)


def test_up_writes_the_ready_file_and_stops_everything_on_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    up = subprocess.Popen(
        [*ARENAC, "substrate", "up", "spine", "--dir", str(tmp_path / "d"), "--ready-file", str(ready),
         "--release", "message=1.4.3", "--set", "message.DB_POOL_SIZE=4", "--set", "TIME_SCALE=0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert up.poll() is None, up.communicate()
            assert time.monotonic() < deadline, "no ready file after 30 s"
            time.sleep(0.1)
        endpoints = Endpoints.from_json(ready.read_text())
        # both carry superuser DSNs: readable by their owner only
        assert stat.S_IMODE(ready.stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "d" / "endpoints.json").stat().st_mode) == 0o600
        assert set(endpoints.services) == {"gateway", "auth", "channel", "message", "fanout", "maintenance"}
        assert endpoints.postgres_dsn.startswith("postgresql://spine_app:")
        view = http("GET", endpoints.services["message"] + "/admin/config", headers=endpoints.admin_headers()).body
        assert (view["release"], view["config"]["DB_POOL_SIZE"], view["config"]["TIME_SCALE"]) == ("1.4.3", "4", "0.5")

        status = arenac("substrate", "status", "--ready-file", str(ready), "--json")
        assert status.returncode == 0, status.stderr
        assert all(item["ready"] for item in json.loads(status.stdout))

        pids = [p.pid for pid in endpoints.pids.values()
                for p in (psutil.Process(pid), *psutil.Process(pid).children())]
        up.send_signal(signal.SIGTERM)
        _, err = up.communicate(timeout=30)
    finally:
        stop_command(up)  # the test failed midway: end our own child, by PID
    assert up.returncode == 0, err
    assert "stopping" in err and "Traceback" not in err
    assert not ready.exists()
    assert_gone(pids, ports_of(endpoints))
    after = arenac("substrate", "status", "--dir", str(tmp_path / "d"))
    assert after.returncode == 1


def test_up_rejects_a_bad_setting_without_a_traceback(tmp_path: Path) -> None:
    result = arenac("substrate", "up", "spine", "--dir", str(tmp_path), "--set", "message.SEQUENCER_MODE=sometimes")
    assert result.returncode == 2
    assert "SEQUENCER_MODE" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "endpoints.json").exists()


def test_calibrate_writes_a_baseline(tmp_path: Path) -> None:
    out = tmp_path / "baseline.json"
    result = arenac("calibrate", "--runs", "1", "--time-scale", "0.03", "--out", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    baseline = json.loads(out.read_text())
    assert out.read_text() == json.dumps(baseline, indent=2, sort_keys=True) + "\n"
    assert baseline["runs"] == 1 and baseline["profile"]["name"] == "spine.standard"
    assert baseline["profile"]["time_scale"] == 0.03
    send_peak = baseline["routes"]["send"]["peak"]
    assert {"p50_ms", "p95_ms", "p99_ms", "error_rate", "goodput_rps", "requests", "spread"} <= set(send_peak)
    assert send_peak["p50_ms"] <= send_peak["p95_ms"] <= send_peak["p99_ms"]
    assert baseline["error_rate"] == 0.0
