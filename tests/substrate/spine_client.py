"""A small client of a running spine stack for the tests: public API, admin API, SQL, bursts,
and `assert_gone` (PIDs dead, ports closed) for clean-stop checks."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import psutil

from arenac.substrate.spine.stack import Endpoints, SpineStack


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    seconds: float = 0.0


def http(method: str, url: str, body: Any = None, token: str | None = None, timeout: float = 15,
         headers: dict[str, str] | None = None) -> Reply:
    """One request; `token` is a user's (the public API), `headers` e.g. `endpoints.admin_headers()`."""
    headers = {"Content-Type": "application/json", **(headers or {})}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw, status = response.read(), response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    text = raw.decode(errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return Reply(status, parsed, time.perf_counter() - started)


class Spine:
    """A client of one running stack: public API, admin API, SQL."""

    def __init__(self, stack: SpineStack) -> None:
        assert stack.endpoints is not None
        self.stack = stack
        self.ep: Endpoints = stack.endpoints

    def login(self, user: str = "ada") -> str:
        reply = http("POST", self.ep.gateway + "/api/login", {"user": user})
        assert reply.status == 200, reply
        return str(reply.body["token"])

    def send(self, channel: str, text: str, token: str, timeout: float = 15) -> Reply:
        return http("POST", f"{self.ep.gateway}/api/channels/{channel}/messages", {"text": text}, token, timeout)

    def read(self, channel: str, after: int, token: str) -> Reply:
        return http("GET", f"{self.ep.gateway}/api/channels/{channel}/messages?after={after}", token=token)

    def admin(self, service: str, path: str, body: Any = None) -> Reply:
        """An admin call with the stack's admin credential (as the harness makes them)."""
        return http("POST" if body is not None else "GET", self.ep.services[service] + path, body,
                    headers=self.ep.admin_headers())

    def sql(self, query: str, *args: Any, role: str = "postgres") -> list[asyncpg.Record]:
        async def run() -> list[asyncpg.Record]:
            conn = await asyncpg.connect(self.ep.postgres[role])
            try:
                return list(await conn.fetch(query, *args))
            finally:
                await conn.close()

        return asyncio.run(run())

    def burst(self, method: str, path: str, count: int, token: str, text: str | None = None) -> list[Reply]:
        """`count` identical gateway requests, all in flight at once."""

        async def run() -> list[Reply]:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                async def one() -> Reply:
                    started = time.perf_counter()
                    async with session.request(method, self.ep.gateway + path,
                                               json={"text": text} if text is not None else None,
                                               headers={"Authorization": f"Bearer {token}"}) as response:
                        body = await response.json(content_type=None)
                        return Reply(response.status, body, time.perf_counter() - started)

                return list(await asyncio.gather(*(one() for _ in range(count))))

        return asyncio.run(run())

    def concurrent_sends(self, channel: str, count: int, token: str) -> list[Reply]:
        return self.burst("POST", f"/api/channels/{channel}/messages", count, token, text="burst")

    def wait_for(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(0.05)

    def backlog(self) -> int:
        reply = self.admin("fanout", "/admin/backlog")
        assert reply.status == 200, reply
        return int(reply.body["backlog"])


def ports_of(endpoints: Endpoints) -> list[int]:
    urls = [*endpoints.services.values(), endpoints.redis, endpoints.postgres_dsn]
    return [int(url.rsplit(":", 1)[1].split("/")[0]) for url in urls]


def assert_gone(pids: list[int], ports: list[int]) -> None:
    """Every PID is dead (or a zombie) and nothing listens on the ports any more."""
    alive = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes still running: {alive}"
    for port in ports:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            assert sock.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still open"


def stop_command(up: subprocess.Popen) -> None:
    """End an `arenac substrate up` a test started and left running (it failed midway), by PID:
    SIGTERM first, so that it stops its own PostgreSQL and Redis (a SIGKILL would orphan them),
    then SIGKILL if it does not stop in time."""
    if up.poll() is not None:
        return
    up.send_signal(signal.SIGTERM)
    try:
        up.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        up.kill()
        up.communicate(timeout=30)
