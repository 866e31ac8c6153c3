"""Where the broker's socket lives: in the directory its owner names (the runner names the episode's
scratch directory, which the watchdog reaps after a runner killed by SIGKILL), else in the system's
temporary directory; `stop()` removes it either way."""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path

from arenac.broker import Broker
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


def _broker(tmp_path: Path) -> Broker:
    # a stack that is never started: answering a refused request reaches no service
    surface = load_library().substrates["spine"].access["confined"]
    cluster = LocalCluster(SpineStack(tmp_path / "stack", SpineSpec()))
    return Broker(ToolBox(cluster, surface, []), tools=("kubectl",))


def _ask(address: str, request: dict) -> dict:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(10)
        conn.connect(address.removeprefix("unix:"))
        conn.sendall(json.dumps(request).encode() + b"\n")
        return json.loads(conn.makefile("rb").readline())


def test_the_socket_lives_in_the_named_parent_and_goes_with_stop(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    broker = _broker(tmp_path)
    address = broker.start(parent=scratch)
    try:
        assert broker.socket_dir.parent == scratch
        answer = _ask(address, {"token": "not-the-token", "tool": "kubectl", "argv": ["get", "pods"]})
        assert answer["code"] == 1 and "Unauthorized" in answer["stderr"]
    finally:
        broker.stop()
    assert list(scratch.iterdir()) == []


def test_without_a_parent_the_socket_is_in_the_temporary_directory(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    broker.start()
    socket_dir = broker.socket_dir
    try:
        assert socket_dir.parent == Path(tempfile.gettempdir()) and socket_dir.name.startswith("arenac-broker-")
    finally:
        broker.stop()
    assert not socket_dir.exists()
