"""A tool client that goes away mid-call (the freeze kills it, or it gives up) prints nothing on the
runner's console; an error of the broker itself is still reported."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from arenac.broker import Broker
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack

REQUEST = json.dumps({"tool": "kubectl", "argv": ["get", "pods"]}).encode() + b"\n"


def _broker(tmp_path: Path) -> Broker:
    # a stack that is never started: a refused or failing call reaches no service
    surface = load_library().substrates["spine"].access["confined"]
    return Broker(ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, []), tools=("kubectl",))


def _call_and_leave(address: str, count: int) -> None:
    """COUNT clients that send a call and close at once, without reading the answer."""
    for _ in range(count):
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(address.removeprefix("unix:"))
            conn.sendall(REQUEST)
    time.sleep(0.5)  # the handler threads finish their answers


def test_clients_that_leave_without_the_answer_print_nothing(tmp_path: Path, capfd) -> None:
    broker = _broker(tmp_path)
    address = broker.start(parent=tmp_path)
    try:
        _call_and_leave(address, 20)
    finally:
        broker.stop()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(("raised", "printed"), [(ConnectionResetError, False), (ValueError, True)])
def test_a_connection_error_is_quiet_and_a_bug_is_reported(tmp_path: Path, capfd, monkeypatch, raised, printed) -> None:
    broker = _broker(tmp_path)

    def failing(line: bytes) -> dict:
        raise raised("simulated")

    monkeypatch.setattr(broker, "answer", failing)
    address = broker.start(parent=tmp_path)
    try:
        _call_and_leave(address, 1)
    finally:
        broker.stop()
    err = capfd.readouterr().err
    assert (f"{raised.__name__}: simulated" in err) is printed
