"""free_port picks a server's port below the kernel's ephemeral range, which no outgoing connection
is ever given, and only a port it could bind (both sides: a taken port is skipped)."""

from __future__ import annotations

import socket
from pathlib import Path

from arenac.substrate import procs


def _ephemeral_start() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_the_port_is_below_the_ephemeral_range_and_free():
    for _ in range(20):
        port = procs.free_port()
        assert procs._LOWEST_SERVER_PORT <= port < _ephemeral_start()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free: it binds


def test_a_taken_port_is_never_chosen(monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        busy = taken.getsockname()[1]
        calls = []
        real = procs.random.randrange

        def randrange(low: int, high: int) -> int:  # the taken port twice, then a real draw
            calls.append(low)
            return busy if len(calls) <= 2 else real(low, high)

        monkeypatch.setattr(procs.random, "randrange", randrange)
        port = procs.free_port()
        assert port != busy and len(calls) >= 3
