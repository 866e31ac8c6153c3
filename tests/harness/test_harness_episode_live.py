"""`arenac harness episode` as a Harbor task's harness container runs it, with the agent's
container played by the unprivileged agent user of this machine: the episode runs as a process of
its own on revoked-grant at time scale 0.1; `status --handed-over` turns 0 at the handover; the
agent's tool clients (written by `write_tool_clients`, as an export writes them) reach the broker
over TCP only; `finish` ends the agent's phase and copies the graded run. The oracle's solve.sh
earns reward 1; an agent that does nothing earns 0, scored. The agent user can read neither the
run directory nor the status. One live episode at a time, under the machine's live lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arenac.broker.clients import write_tool_clients
from arenac.broker.server import client_interpreter
from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.access import brokered_tools
from arenac.runner.agents import claim_agent_account
from arenac.runner.bundle import open_bundle
from arenac.runner.state import StateDir
from helpers import ROOT
from livelock import live_lock

pytestmark = pytest.mark.live  # runs an episode

ARENAC = str(Path(sys.executable).parent / "arenac")
TIME_SCALE = "0.1"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("revoked-grant")
    write_bundles(compile_paths([ROOT / "tasks" / "revoked-grant.arena"]), out)
    return sorted(out.glob("revoked-grant/*/plan.json"))[0].parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Harness:
    process: subprocess.Popen[str]
    ctl: Path
    port: int
    token: str


@pytest.fixture
def harness(bundle: Path, tmp_path: Path) -> Iterator[Harness]:
    """The episode's process, handed over; terminated by its PID at the end (SIGTERM: a clean end)."""
    token = "token-of-this-test"
    (tmp_path / "token").write_text(token + "\n")
    port = _free_port()
    ctl = tmp_path / "ctl"
    with live_lock():
        process = subprocess.Popen([ARENAC, "harness", "episode", str(bundle), "--listen", f"127.0.0.1:{port}",
                                    "--token-file", str(tmp_path / "token"), "--run-dir", str(ctl),
                                    "--time-scale", TIME_SCALE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        try:
            deadline = time.monotonic() + 300
            while True:
                status = subprocess.run([ARENAC, "harness", "status", "--run-dir", str(ctl), "--handed-over"],
                                        capture_output=True, text=True, timeout=60)
                if status.returncode != 1:
                    break
                assert time.monotonic() < deadline, "no handover within 300 s"
                time.sleep(1)
            assert status.returncode == 0, status.stderr
            yield Harness(process, ctl, port, token)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                _, err = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise
            assert "Traceback" not in err, err
            assert process.returncode == 0, err


@pytest.fixture
def agent_side() -> Iterator[tuple[tuple[int, int], Path]]:
    """An agent user of its own (claimed as an episode claims it: a qualification beside this test
    must not sweep its processes) and a directory it can reach, outside the test's private tmp."""
    account, lock = claim_agent_account(StateDir.default().root)
    if account is None:
        pytest.skip("not root: there is no unprivileged agent user to play the agent's container")
    home = Path(tempfile.mkdtemp(prefix="arenac-harbor-agent-"))
    os.chmod(home, 0o755)
    try:
        yield account, home
    finally:
        lock.close()
        shutil.rmtree(home, ignore_errors=True)


def _as_agent(account: tuple[int, int], argv: list[str], cwd: Path, tools: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, user=account[0], group=account[1], extra_groups=[], capture_output=True,
                          text=True, timeout=300, env={"PATH": f"{tools}:/usr/bin:/bin", "HOME": str(cwd),
                                                        "LANG": "C.UTF-8"})


def _finish(harness: Harness, out: Path) -> dict:
    done = subprocess.run([ARENAC, "harness", "finish", "--run-dir", str(harness.ctl), "--out", str(out),
                           "--timeout", "300"], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_oracle_through_the_tcp_broker_earns_reward_1(bundle: Path, harness: Harness, agent_side,
                                                          tmp_path: Path) -> None:
    account, home = agent_side
    tools = home / "tools"
    write_tool_clients(tools, brokered_tools(open_bundle(bundle).plan), f"127.0.0.1:{harness.port}", harness.token,
                       interpreter=client_interpreter(), time_scale=float(TIME_SCALE))
    work = home / "work"
    work.mkdir()
    shutil.copyfile(bundle / "oracle" / "solve.sh", work / "solve.sh")
    os.chown(work, *account)
    solved = _as_agent(account, ["sh", "./solve.sh"], work, tools)
    assert solved.returncode == 0, solved.stderr
    assert "repair declared complete" in solved.stdout
    for peek in (["ls", str(harness.ctl)], ["cat", str(harness.ctl / "status.json")],
                 ["ls", str(harness.ctl / "run")]):
        refused = _as_agent(account, peek, work, tools)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr, peek
    result = _finish(harness, tmp_path / "out")
    assert (result["status"], result["reward"]) == ("scored", 1)
    assert json.loads((tmp_path / "out" / "reward.json").read_text())["reward"] == 1
    for name in ("verdict.json", "run.json", "events.jsonl", "actions.jsonl", "evidence/boundary.json"):
        assert (tmp_path / "out" / name).is_file(), name
    boundary = json.loads((tmp_path / "out" / "evidence" / "boundary.json").read_text())
    assert (boundary["agent"], boundary["declared"], boundary["method"], boundary["processes_stopped"]) == (
        "external", True, "external: broker closed", 0)
    # after the freeze the broker refuses the agent, in one line
    late = _as_agent(account, ["db-sql", "-c", "SELECT 1"], work, tools)
    assert late.returncode == 1 and late.stdout == ""


def test_an_agent_that_does_nothing_earns_reward_0_scored(harness: Harness, tmp_path: Path) -> None:
    result = _finish(harness, tmp_path / "out")
    assert (result["status"], result["reward"]) == ("scored", 0)
    boundary = json.loads((tmp_path / "out" / "evidence" / "boundary.json").read_text())
    assert (boundary["agent"], boundary["declared"]) == ("external", False)
    again = _finish(harness, tmp_path / "again")  # idempotent: the same result, copied again
    assert again["reward"] == 0
