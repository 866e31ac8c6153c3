"""Where a running spine stack answers, and its health seen from outside.

Contract:
- `Endpoints` (declared in arenac/substrate/interface.py, for every substrate) is the stack's
  published address book and the JSON of the ready file and of `D/endpoints.json` (both written
  0600: they carry superuser DSNs, the harness's Redis user and the admin credential).
  `Endpoints.from_json` checks the shape and raises `EndpointsError` (a ValueError, one readable
  line) for anything else: not JSON, a missing field, a wrong type.
- `probe(endpoints)` reports each component's health from the endpoints alone (HTTP `/readyz`, a
  Redis PING, `pg_isready`), so `arenac substrate status` works from another process. No password
  is ever put on a command line (other users can list those).
"""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

import psutil
import redis

from arenac.substrate.interface import Endpoints, EndpointsError
from arenac.substrate.spine.postgres import POSTGRES_BIN_PATH

__all__ = ["ComponentStatus", "Endpoints", "EndpointsError", "http_not_ready", "probe"]


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int | None
    running: bool
    ready: bool
    detail: str = ""


def http_not_ready(url: str, timeout: float = 2.0) -> str:
    """Empty when `url` answers 200, else why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return "" if response.status == 200 else f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:200]}"
    except (urllib.error.URLError, OSError) as exc:
        return str(exc)


def probe(endpoints: Endpoints) -> list[ComponentStatus]:
    """Health of every component of a stack described by its endpoints (used by `status`)."""

    def running(name: str) -> bool:
        pid = endpoints.pids.get(name)
        return pid is not None and psutil.pid_exists(pid)

    out = []
    for name, url in endpoints.services.items():
        reason = http_not_ready(url + "/readyz")
        out.append(ComponentStatus(name, endpoints.pids.get(name), running(name), not reason, reason))
    try:
        with redis.Redis.from_url(endpoints.redis, socket_timeout=2) as conn:
            conn.ping()
        detail = ""
    except (redis.RedisError, OSError, ValueError) as exc:
        detail = str(exc)
    out.append(ComponentStatus("redis", endpoints.pids.get("redis"), running("redis"), not detail, detail))
    pg = _pg_not_ready(endpoints.postgres_dsn)
    out.append(ComponentStatus("postgres", endpoints.pids.get("postgres"), running("postgres"), not pg, pg))
    return out


def _pg_not_ready(dsn: str) -> str:
    # pg_isready does not authenticate: host, port and user are enough, and no password leaks to `ps`
    try:
        parts = urlsplit(dsn)
        argv = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or "postgres"]
    except ValueError as exc:
        return f"bad DSN: {exc}"
    result = subprocess.run([str(POSTGRES_BIN_PATH / "pg_isready"), *argv], capture_output=True, text=True, timeout=10,
                            check=False)
    return "" if result.returncode == 0 else (result.stdout.strip() or "not accepting connections")
