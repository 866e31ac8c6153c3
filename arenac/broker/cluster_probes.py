"""What the local cluster asks of the machine to describe a part: when a process started, whether a
service's readiness URL answers 200, whether a datastore's loopback port accepts a connection.
Each answers within a bounded time (2 s, 1 s) and never raises for a part that is down.
"""

from __future__ import annotations

import socket
import time
import urllib.request

import psutil


def process_start(pid: int | None) -> float:
    try:
        return psutil.Process(pid).create_time() if pid else time.time()
    except psutil.NoSuchProcess:
        return time.time()


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0
