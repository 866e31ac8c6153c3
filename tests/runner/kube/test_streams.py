"""The runner's streams into a harness pod (arenac/runner/kube/streams.py), with real sockets on
loopback and no cluster: the relay of a unix socket to a TCP upstream (a stand-in for the pod's
broker port: a small line server on 127.0.0.1), the brokered tool client through it, half-closes,
a refused upstream, the freeze ending live connections; and the fetch's archive both ways (a real
tree through the very command the pod runs, and archives that try to leave their directory)."""

from __future__ import annotations

import base64
import io
import json
import socket
import subprocess
import sys
import tarfile
import threading
import time

import pytest

from arenac.broker import client
from arenac.runner.kube.api import KubeError
from arenac.runner.kube.streams import TcpRoutes, UnixRelay, archive_argv, unpack_archive
from helpers.line_server import LineServer


@pytest.fixture
def server():
    line_server = LineServer()
    yield line_server
    line_server.close()


def _relay(tmp_path, port: int) -> UnixRelay:
    return UnixRelay.start(tmp_path / "broker.sock", TcpRoutes("127.0.0.1", port))


def test_the_tool_client_reaches_the_upstream_through_the_relay(tmp_path, server) -> None:
    relay = _relay(tmp_path, server.port)
    try:
        assert relay.address == f"unix:{tmp_path / 'broker.sock'}"
        answer = client.call(relay.address, "tok", "kubectl", ["get", "pods"])
        assert answer == {"code": 0, "stdout": "kubectl get pods\n", "stderr": ""}
        again = client.call(relay.address, "tok", "db-sql", ["-c", "select 1"])  # a fresh upstream each time
        assert again["stdout"] == "db-sql -c select 1\n"
        assert [r["token"] for r in server.seen] == ["tok", "tok"]
        assert relay.connections == 2 and relay.failures == 0
    finally:
        relay.close()
    assert not (tmp_path / "broker.sock").exists()


def test_large_payloads_cross_both_ways_intact(tmp_path, server) -> None:
    relay = _relay(tmp_path, server.port)
    try:
        argv = ["x" * 300_000]  # several relay chunks each way
        answer = client.call(relay.address, "tok", "admin-api", argv)
        assert answer["stdout"] == "admin-api " + argv[0] + "\n"
    finally:
        relay.close()


def test_a_half_close_is_passed_on_and_the_answer_still_comes_back(tmp_path, server) -> None:
    relay = _relay(tmp_path, server.port)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(tmp_path / "broker.sock"))
            sock.sendall(json.dumps({"token": "t", "tool": "kubectl", "argv": ["version"]}).encode() + b"\n")
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(5)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        assert json.loads(data)["stdout"] == "kubectl version\n"
    finally:
        relay.close()


def test_an_upstream_that_cannot_be_reached_closes_the_connection_unanswered(tmp_path) -> None:
    unused = socket.create_server(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()  # nothing listens there now
    relay = _relay(tmp_path, port)
    try:
        assert client.call(relay.address, "tok", "kubectl", ["get", "pods"]) == {}
        assert relay.failures == 1
        with pytest.raises(KubeError, match=f"cannot reach the broker at 127.0.0.1:{port}"):
            TcpRoutes("127.0.0.1", port).connect()
    finally:
        relay.close()


def test_close_ends_a_live_connection_and_refuses_new_ones(tmp_path) -> None:
    holding = LineServer(hold=True)
    relay = _relay(tmp_path, holding.port)
    result: dict = {}

    def call() -> None:
        result["answer"] = client.call(relay.address, "tok", "kubectl", ["get", "pods", "--watch"])

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not holding.seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert holding.seen, "the request never reached the upstream"
    assert thread.is_alive()  # the upstream holds it: no answer yet
    relay.close()
    thread.join(timeout=5)
    assert not thread.is_alive() and result["answer"] == {}  # ended unanswered by the freeze
    with pytest.raises(OSError):
        client.call(relay.address, "tok", "kubectl", ["get", "pods"])
    relay.close()  # idempotent
    holding.close()


def test_the_archive_command_round_trips_a_tree(tmp_path) -> None:
    source = tmp_path / "collected"
    (source / "evidence" / "snapshots").mkdir(parents=True)
    (source / "verdict.json").write_text('{"reward": 1}\n')
    (source / "evidence" / "ledger.json").write_bytes(bytes(range(256)) * 100)
    (source / "evidence" / "snapshots" / "baseline.json").write_text("{}")
    argv = archive_argv(str(source))
    assert argv[0] == "python3"  # the pod's interpreter: the image holds no tar binary we rely on
    stdout = subprocess.run([sys.executable, *argv[1:]], check=True, capture_output=True).stdout
    destination = tmp_path / "fetched"
    assert unpack_archive(stdout, destination) == ["evidence/ledger.json", "evidence/snapshots/baseline.json",
                                                   "verdict.json"]
    assert (destination / "evidence" / "ledger.json").read_bytes() == bytes(range(256)) * 100
    assert (destination / "verdict.json").read_text() == '{"reward": 1}\n'


def _archive(add) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        add(archive)
    return base64.b64encode(buffer.getvalue())


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x"):
    def add(archive: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        if kind == tarfile.SYMTYPE:
            info.linkname = "/etc/passwd"
        archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


@pytest.mark.parametrize(("name", "kind", "says"), [
    ("../escape", tarfile.REGTYPE, "outside its directory"),
    ("/etc/escape", tarfile.REGTYPE, "outside its directory"),
    ("./evidence/../../escape", tarfile.REGTYPE, "outside its directory"),
    ("link", tarfile.SYMTYPE, "not a file or directory"),
])
def test_an_archive_that_leaves_its_directory_is_refused(tmp_path, name, kind, says) -> None:
    destination = tmp_path / "fetched"
    with pytest.raises(KubeError, match=says):
        unpack_archive(_archive(_member(name, kind)), destination)
    assert not (tmp_path / "escape").exists()
    assert unpack_archive(_archive(_member("./ok.json")), destination) == ["ok.json"]  # the same shape, inside


def test_output_that_is_not_an_archive_is_refused(tmp_path) -> None:
    with pytest.raises(KubeError, match="not an archive"):
        unpack_archive(b"Traceback (most recent call last):", tmp_path)
