"""The parts watch (runner/watch.py) on real processes: exits and stops are seen, and blamed right."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from arenac.runner import watch as watch_module
from arenac.runner.watch import PartsWatch, changing_calls
from arenac.substrate.procs import Child


@dataclass
class _Clock:
    t: float = 0.0

    def now(self) -> float:
        return self.t


@dataclass
class _Stack:
    """The two questions the watch asks a stack, over real processes."""

    running: dict[str, Child] = field(default_factory=dict)
    under_restart: set[str] = field(default_factory=set)

    def children(self) -> dict[str, Child]:
        return dict(self.running)

    def restarting(self) -> frozenset[str]:
        return frozenset(self.under_restart)


@dataclass
class _Loadgen:
    process: subprocess.Popen


def _sleeper(tmp_path: Path, name: str) -> Child:
    return Child(name, subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]), tmp_path / name)


@pytest.fixture
def parts(tmp_path):
    stack = _Stack({"postgres": _sleeper(tmp_path, "postgres"), "message": _sleeper(tmp_path, "message")})
    loadgen = _Loadgen(_sleeper(tmp_path, "loadgen").popen)
    yield stack, loadgen
    for popen in [c.popen for c in stack.running.values()] + [loadgen.process]:
        if popen.poll() is None:
            os.kill(popen.pid, signal.SIGCONT)
            popen.kill()
            popen.wait()


def _kill(popen: subprocess.Popen, sig=signal.SIGKILL) -> None:
    os.kill(popen.pid, sig)
    if sig == signal.SIGKILL:
        popen.wait(10)


def test_nothing_lost_nothing_blamed(parts):
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(50.0))
    watch.check()
    assert watch.losses == [] and watch.blame(10.0, []) is None


def test_a_substrate_part_lost_before_the_handover_is_the_infrastructures(parts):
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(5.0))
    _kill(stack.running["postgres"].popen)
    watch.check()
    watch.check()  # seen once
    losses = [(loss.part, loss.kind, loss.how) for loss in watch.losses]
    assert losses == [("postgres", "substrate", "killed by SIGKILL")]
    assert "before the handover" in watch.blame(10.0, [])


def test_after_the_handover_a_loss_is_the_agents_only_after_a_call_that_could_cause_it(parts):
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(40.0))
    _kill(stack.running["message"].popen)
    watch.check()
    assert "no call of the agent" in watch.blame(10.0, [])
    assert "no call of the agent" in watch.blame(10.0, [45.0])  # a call after the loss explains nothing
    assert watch.blame(10.0, [30.0]) is None  # the agent changed something first: the gates judge it


def test_the_load_generator_lost_at_any_time_is_the_harness(parts):
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(40.0))
    _kill(loadgen.process)
    watch.check()
    assert watch.blame(10.0, [30.0]).startswith("harness part loadgen killed by SIGKILL")


def test_a_part_restarted_on_purpose_is_not_lost(parts):
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(40.0))
    stack.under_restart.add("message")
    _kill(stack.running["message"].popen)
    watch.check()
    assert watch.losses == []


def test_a_stopped_part_is_lost_after_the_grace_and_a_brief_stop_is_not(parts, monkeypatch):
    monkeypatch.setattr(watch_module, "STOPPED_GRACE_S", 0.5)
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(40.0))
    redis = stack.running["postgres"].popen
    os.kill(redis.pid, signal.SIGSTOP)
    time.sleep(0.1)
    watch.check()
    os.kill(redis.pid, signal.SIGCONT)  # a brief stop
    time.sleep(0.1)
    watch.check()
    os.kill(redis.pid, signal.SIGSTOP)
    time.sleep(0.1)
    watch.check()
    assert watch.losses == []
    time.sleep(0.6)
    watch.check()
    assert [loss.how for loss in watch.losses] == ["stopped (SIGSTOP) for 0.5 s"]


def test_changing_calls_leave_out_reads():
    actions = [
        {"allowed": True, "tool": "kubectl", "argv": ["get", "pods"], "t": 1.0},
        {"allowed": True, "tool": "kubectl", "argv": ["rollout", "restart", "deployment/x"], "t": 2.0},
        {"allowed": False, "tool": "kubectl", "argv": ["delete", "pod", "x"], "t": 3.0},
        {"allowed": True, "tool": "admin-api", "argv": ["message", "GET", "/admin/config"], "t": 4.0},
        {"allowed": True, "tool": "admin-api", "argv": ["message", "POST", "/admin/reload"], "t": 5.0},
        {"allowed": True, "tool": "db-sql", "argv": ["SELECT 1"], "t": 6.0},
        {"allowed": True, "tool": "declare_repair_complete", "argv": [], "t": 7.0},
    ]
    assert changing_calls(actions) == [2.0, 5.0, 6.0]


def test_a_strict_look_counts_a_stopped_part_at_once(parts):
    """Before the harness restarts parts on purpose (which would end a stopped process)."""
    stack, loadgen = parts
    watch = PartsWatch(stack, loadgen, _Clock(40.0))
    message = stack.running["message"].popen
    os.kill(message.pid, signal.SIGSTOP)
    time.sleep(0.1)
    watch.check()
    assert watch.losses == []  # within the grace
    watch.check(strict=True)
    assert [(loss.part, loss.how) for loss in watch.losses] == [("message", "stopped (SIGSTOP)")]
