"""A runner killed with SIGKILL leaves a state record; the next runner reaps what it left."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil

from arenac.runner.state import StateDir


def test_reap_kills_orphans_of_a_dead_runner_and_removes_scratch(tmp_path):
    state = StateDir(tmp_path / "state")
    state.root.mkdir()
    scratch = tmp_path / "arenac-episode-test"
    scratch.mkdir()
    # a "runner" that dies, and a child it started
    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        record = {"runner": {"pid": runner.pid, "started": psutil.Process(runner.pid).create_time()},
                  "scratch": str(scratch),
                  "pids": {f"loadgen:{orphan.pid}": {"pid": orphan.pid,
                                                      "started": psutil.Process(orphan.pid).create_time()}}}
        (state.root / f"{scratch.name}.json").write_text(json.dumps(record))
        assert state.reap() == []  # the runner is alive: nothing is touched
        assert orphan.poll() is None
        runner.kill()
        runner.wait()
        cleaned = state.reap()
        assert any("killed loadgen" in line for line in cleaned)
        deadline = time.monotonic() + 5
        while orphan.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert orphan.poll() is not None
        assert not scratch.exists() and not list(state.root.glob("*.json"))
    finally:
        for process in (runner, orphan):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_recycled_pid_is_never_killed(tmp_path):
    state = StateDir(tmp_path / "state")
    state.root.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        record = {"runner": {"pid": 1, "started": 0.0}, "scratch": str(tmp_path / "x"),
                  # same PID, different start time: a process that merely reuses the number
                  "pids": {f"agent:{bystander.pid}": {"pid": bystander.pid, "started": 1.0}}}
        (state.root / "x.json").write_text(json.dumps(record))
        state.reap()
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_reap_ends_what_the_stack_recorded_before_the_runner_could(tmp_path):
    """A runner killed during provisioning: its stack's own ledger (pids.json, written at each spawn)
    names a process the state record does not know yet."""
    from arenac.substrate.procs import Child, PidLedger

    state = StateDir(tmp_path / "state")
    state.root.mkdir()
    scratch = tmp_path / "arenac-episode-prov"
    (scratch / "substrate").mkdir(parents=True)
    redis = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        PidLedger(scratch / "substrate" / "pids.json").record([Child("redis", redis, tmp_path / "log")])
        record = {"runner": {"pid": 1, "started": 0.0}, "scratch": str(scratch), "pids": {}}  # a dead runner
        (state.root / f"{scratch.name}.json").write_text(json.dumps(record))
        cleaned = state.reap()
        assert "killed redis (stack record)" in cleaned
        assert redis.wait(10) is not None and not scratch.exists()
    finally:
        if redis.poll() is None:
            redis.kill()
            redis.wait()
