"""The broker on TCP (an external agent's tool clients in another container): the right token is
served, a wrong one refused and recorded; after `close()` (the freeze) a call is refused and not
recorded, a call in flight is ended, and the Unix socket is gone while the TCP port answers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenac.broker import ActionLog, Broker
from arenac.broker.clients import write_tool_clients
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import AgentClock, ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack

TOOLS = ("time-left", "wait-until-healthy")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    surface = load_library().substrates["spine"].access["confined"]
    clock = AgentClock(lambda: 130.0, opened_s=100.0, window_s=300.0, soak_s=120.0)
    # a stack never started: time-left needs none, and wait-until-healthy waits on it (a call in flight)
    toolbox = ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, [], agent_clock=clock)
    broker = Broker(toolbox, tools=TOOLS, on_action=ActionLog(tmp_path / "actions.jsonl"), token="the-token")
    broker.start(parent=tmp_path)
    broker.listen_tcp("127.0.0.1", 0)
    try:
        yield broker
    finally:
        broker.stop()


def _clients(tmp_path: Path, broker: Broker, token: str, name: str) -> Path:
    address = broker.tcp_address.removeprefix("tcp:")  # HOST:PORT, as an export writes harness:7400
    write_tool_clients(tmp_path / name, TOOLS, address, token, interpreter=sys.executable)
    return tmp_path / name


def _run(tools: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tools / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60)


def _records(tmp_path: Path) -> list[dict]:
    path = tmp_path / "actions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_right_token_is_served_and_a_wrong_one_refused(tmp_path: Path, broker: Broker) -> None:
    served = _run(_clients(tmp_path, broker, "the-token", "good"), "time-left")
    assert served.returncode == 0, served.stderr
    assert served.stdout.startswith("elapsed 30 s of your 300 s window")
    refused = _run(_clients(tmp_path, broker, "not-the-token", "bad"), "time-left")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "Unauthorized" in refused.stderr
    assert [(r["tool"], r["allowed"], r["reason"]) for r in _records(tmp_path)] == [
        ("time-left", True, ""), ("time-left", False, "bad broker token")]


def test_after_the_close_a_call_is_refused_and_not_recorded(tmp_path: Path, broker: Broker) -> None:
    tools = _clients(tmp_path, broker, "the-token", "tools")
    assert _run(tools, "time-left").returncode == 0  # before the freeze: served
    unix_socket = Path(broker.address.removeprefix("unix:"))
    broker.close()
    after = _run(tools, "time-left")
    assert after.returncode == 1 and after.stdout == ""
    assert after.stderr == "error: the agent's window is closed: no further actions\n"
    assert broker.call("time-left", []).reason == "after the freeze"  # in-process too
    assert len(_records(tmp_path)) == 1  # the agent's record ended at the freeze
    assert not unix_socket.exists()  # the local agent's door is gone, as before
    broker.close()  # idempotent


def test_the_close_ends_a_call_in_flight(tmp_path: Path, broker: Broker) -> None:
    tools = _clients(tmp_path, broker, "the-token", "tools")
    waiting = subprocess.Popen([str(tools / "wait-until-healthy"), "--timeout", "20s"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not broker._connections and time.monotonic() < deadline:  # the call reached the broker
        time.sleep(0.05)
    assert broker._connections, "the call never reached the broker"
    started = time.monotonic()
    broker.close()
    out, err = waiting.communicate(timeout=10)
    assert time.monotonic() - started < 5  # ended, not left to its 20 s timeout
    assert waiting.returncode == 1 and out == ""
    assert "wait-until-healthy: the broker closed the connection without an answer" in err
