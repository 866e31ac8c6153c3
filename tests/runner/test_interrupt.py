"""SIGTERM in the middle of an episode tears everything down: no process, port or directory left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from arenac.pipeline import compile_paths, write_bundles

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def _descendants(pid: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def test_sigterm_tears_the_episode_down(tmp_path):
    bundle = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), tmp_path / "b")[0].path
    env = dict(os.environ, ARENAC_STATE_DIR=str(tmp_path / "state"))
    before = set(Path("/tmp").glob("arenac-episode-*"))
    runner = subprocess.Popen([sys.executable, "-m", "arenac.cli", "run", str(bundle), "--agent", "noop",
                               "--time-scale", "0.1", "--out", str(tmp_path / "run")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: set[int] = set()
    ports: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the stack and the load generator run
        seen |= _descendants(runner.pid)
        if (tmp_path / "run" / "evidence" / "ledger.json").exists() and len(seen) >= 8:
            break
        time.sleep(0.2)
    for pid in seen:
        try:
            ports |= {c.laddr.port for c in psutil.Process(pid).net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            pass
    assert len(seen) >= 8 and ports
    runner.send_signal(signal.SIGTERM)
    output = runner.communicate(timeout=90)[0].decode()
    assert "stopping and tearing down" in output
    alive = [pid for pid in seen if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"left running: {alive}"
    listening = {c.laddr.port for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    assert not (ports & listening), f"ports still open: {ports & listening}"
    assert set(Path("/tmp").glob("arenac-episode-*")) <= before
    assert not list((tmp_path / "state").glob("*.json"))
    timeline = (tmp_path / "run" / "evidence" / "timeline.json").read_text()
    assert '"infra_error"' in timeline  # an interrupted trial is never scored as the agent's failure
