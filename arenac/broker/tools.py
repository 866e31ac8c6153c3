"""The agent's tools, decided server-side: one `ToolBox.call(tool, argv)` per invocation.

- `kubectl ...`: see kubectl.py (RBAC from the bundle's rbac/ objects; exec additionally limited
  to the surface's `exec_into` workloads).
- `admin-api SERVICE METHOD PATH [JSON|-]`: one HTTP call to a service's admin API, only for
  (service, path) pairs the surface grants (exact path; no `..`, no percent-encoding). The broker
  adds the services' admin credential, which the agent never sees (without it every /admin call
  answers 401). Prints the response body; exit 1 on a non-2xx answer.
- `db-sql [--role R] [-A] [-t] [-x] [--csv] [-F SEP] -c SQL [-c SQL...]` (or SQL on stdin): runs
  psql server-side with the surface's database role and its password (never shown to the agent);
  psql meta-commands are refused, so only SQL reaches the server. Output and exit code are psql's.
- `wait-until-healthy [--timeout D]`: polls the substrate's health probe (its driver's
  `health_problem`: spine's is every service's readiness and a login + send through the gateway);
  D is in plan time and scales with the time scale. Exit 1 on timeout.
- `time-left`: the agent's clock (it has no other it can trust): how much of its window has gone
  and how much is left, in plan seconds (as the brokered `sleep` counts), and the soak rule:
  declaring ends the window early, never the soak. Read-only; exit 1 outside an episode.
- `declare_repair_complete`: tells the runner (the `on_declare` callback), once.

What the tools other than kubectl reach is a `ToolTarget`: the substrate's endpoints and driver,
the processes the calls run (the freeze ends them) and which services' processes exited. A
`LocalCluster` gives one (`ToolTarget.of_cluster`, the default); a substrate on a Kubernetes
cluster gives its own (`ToolBox(None, ..., target=...)`: no brokered kubectl, as the agent holds a
real one there; psql reaches the database at the connection string's host and port).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from arenac.broker.cluster import LocalCluster
from arenac.broker.inflight import InFlight, InFlightClosed
from arenac.broker.kubeargs import duration_seconds
from arenac.broker.kubectl import Kubectl
from arenac.broker.outcome import Denied, Failed, ToolResult
from arenac.broker.rbac import Authorizer
from arenac.model.access import AccessSurface
from arenac.model.plan import BROKERED_TOOLS
from arenac.substrate.interface import Endpoints, SubstrateDriver

TOOLS = BROKERED_TOOLS
PSQL_FORMAT_FLAGS = {"-A": False, "-t": False, "-x": False, "--csv": False, "-F": True, "-P": True}
MIN_HEALTH_WAIT_S = 2.0


@dataclass(frozen=True)
class AgentClock:
    """The agent's window on the plan clock, for `time-left`: NOW reads plan seconds; the window
    opened at OPENED_S and lasts WINDOW_S; the soak that follows it lasts SOAK_S."""

    now: Callable[[], float]
    opened_s: float
    window_s: float
    soak_s: float


def _none_exited() -> list[str]:
    return []


@dataclass(frozen=True)
class ToolTarget:
    """What admin-api, db-sql and wait-until-healthy reach (see the module's docstring)."""

    endpoints: Callable[[], Endpoints | None]  # None while the stack is not running
    substrate: SubstrateDriver
    inflight: InFlight
    # services whose process exited (its port may stay open): a local stack knows; a cluster's
    # health probe alone decides
    exited: Callable[[], list[str]] = _none_exited

    @classmethod
    def of_cluster(cls, cluster: LocalCluster) -> ToolTarget:
        stack = cluster.stack
        return cls(lambda: stack.endpoints, stack.substrate, cluster.inflight, stack.exited)


class ToolBox:
    def __init__(self, cluster: LocalCluster | None, surface: AccessSurface, rbac_objects: Sequence[dict[str, Any]],
                 *, authorizer: Authorizer | None = None, time_scale: float = 1.0,
                 on_declare: Callable[[], None] | None = None, max_wait: float = 600.0,
                 agent_clock: AgentClock | None = None, target: ToolTarget | None = None) -> None:
        """`cluster`: the brokered kubectl's cluster (None: no kubectl, and `target` is required)."""
        if target is None:
            if cluster is None:
                raise ValueError("a ToolBox needs a cluster or a target")
            target = ToolTarget.of_cluster(cluster)
        self.agent_clock = agent_clock
        self.cluster = cluster
        self.target = target
        self.surface = surface
        self.time_scale = time_scale
        self.on_declare = on_declare
        self.max_wait = max_wait
        self.authorizer = authorizer or Authorizer(rbac_objects)
        self.rbac_objects = list(rbac_objects)
        self.declared = threading.Event()
        # the processes tool calls run (db-sql's psql, kubectl exec): the freeze ends them
        self.inflight = target.inflight

    def set_audit(self, audit: Callable[[str, list[str], bool, str], None] | None) -> None:
        """Where calls made inside a tool call are reported (the admin calls and Redis commands of
        a `kubectl exec`): audit(tool, argv, allowed, reason)."""
        if self.cluster is not None:  # without the brokered kubectl no call runs inside another
            self.cluster.audit = audit

    def call(self, tool: str, argv: Sequence[str], stdin: bytes | None = None,
             edit: str | None = None) -> ToolResult:
        try:
            if tool == "kubectl" and self.cluster is not None:
                # one Kubectl per call: calls run concurrently (one thread per connection)
                kubectl = Kubectl(self.cluster, self.authorizer, self.rbac_objects, max_wait=self.max_wait,
                                  exec_into=self.surface.exec_into)
                return kubectl.run(argv, stdin, edit)
            if tool == "admin-api":
                return self.admin_api(argv, stdin)
            if tool == "db-sql":
                return self.db_sql(argv, stdin)
            if tool == "wait-until-healthy":
                return self.wait_until_healthy(argv)
            if tool == "time-left":
                return self.time_left(argv)
            if tool == "declare_repair_complete":
                return self.declare()
            raise Denied(f"error: no such tool {tool!r}")
        except Denied as exc:
            return ToolResult(1, "", f"{exc}\n", False, str(exc))
        except Failed as exc:
            return ToolResult(exc.code, "", f"{exc}\n", True, str(exc))

    # -- admin-api ---------------------------------------------------------------------------
    def admin_api(self, argv: Sequence[str], stdin: bytes | None) -> ToolResult:
        if len(argv) not in (3, 4):
            raise Failed("usage: admin-api SERVICE METHOD PATH [JSON|-]")
        service, method, path = argv[0], argv[1].upper(), argv[2]
        bare = path.split("?", 1)[0]
        granted = self.surface.admin_paths(service)
        if not granted:
            raise Denied(f"admin-api: forbidden: the access surface grants no admin API of service {service!r}")
        if bare not in granted or ".." in path or "%" in path or "#" in path:
            raise Denied(f"admin-api: forbidden: {method} {path} on {service} is not granted "
                         f"(granted paths: {', '.join(granted)})")
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise Failed(f"admin-api: unsupported method {method}")
        body: bytes | None = None
        if len(argv) == 4:
            text = (stdin or b"").decode() if argv[3] == "-" else argv[3]
            try:
                json.loads(text)
            except ValueError as exc:
                raise Failed(f"admin-api: the body is not valid JSON: {exc}") from None
            body = text.encode()
        endpoints = self._endpoints()
        url = endpoints.services[service] + path
        request = urllib.request.Request(url, data=body, method=method,
                                         headers={"Content-Type": "application/json", **endpoints.admin_headers()})
        reason = f"{method} {service}{bare}"
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return ToolResult(0, _with_newline(response.read().decode(errors="replace")), "", True, reason)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            return ToolResult(1, _with_newline(text), f"admin-api: HTTP {exc.code}\n", True, reason)
        except OSError as exc:
            return ToolResult(1, "", f"admin-api: cannot reach {service}: {exc}\n", True, reason)

    # -- db-sql ------------------------------------------------------------------------------
    def db_sql(self, argv: Sequence[str], stdin: bytes | None) -> ToolResult:
        role, statements, flags = self.surface.db_role, [], []
        words = list(argv)
        while words:
            word = words.pop(0)
            name, eq, value = word.partition("=")
            if name in ("--role", "-U", "-c", "--command") or PSQL_FORMAT_FLAGS.get(name):
                if not eq:
                    if not words:
                        raise Failed(f"db-sql: {name} needs a value")
                    value = words.pop(0)
                if name in ("--role", "-U"):
                    role = value
                elif name in ("-c", "--command"):
                    statements.append(value)
                else:
                    flags += [name, value]
            elif word in PSQL_FORMAT_FLAGS:
                flags.append(word)
            else:
                raise Failed(f"db-sql: unsupported argument {word!r}\nusage: db-sql [--role ROLE] [-A] [-t] [-x] "
                             "[--csv] [-F SEP] -c SQL [-c SQL ...]   (or the SQL on standard input)")
        if not self.surface.db_role:
            raise Denied("db-sql: forbidden: the access surface grants no database role")
        if role != self.surface.db_role:
            raise Denied(f"db-sql: forbidden: database role {role!r} is not granted (granted: {self.surface.db_role})")
        if not statements and stdin:
            statements = [stdin.decode(errors="replace")]
        if not statements:
            raise Failed("db-sql: no SQL given (use -c SQL or standard input)")
        if any(s.lstrip().startswith("\\") for s in statements):
            raise Failed("db-sql: psql meta-commands (\\...) are not available; send SQL statements only")
        dsn = urlsplit(self._endpoints().postgres[role])
        substrate = self.target.substrate
        psql = substrate.postgres_bin / "psql"
        # the connection string's host: 127.0.0.1 for a local stack, the database's Service on a cluster
        command = [str(psql), "-X", "-v", "ON_ERROR_STOP=1", "-h", dsn.hostname or "127.0.0.1",
                   "-p", str(dsn.port or 5432), "-U", role, "-d", dsn.path.lstrip("/") or substrate.database, *flags]
        for statement in statements:
            command += ["-c", statement]
        # the connection string percent-encodes the password (a cluster's: substrate/spine/in_cluster.py)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PGPASSWORD": unquote(dsn.password or ""),
               "PGCONNECT_TIMEOUT": "5", "PGAPPNAME": "arenac-agent", "HOME": "/nonexistent"}
        try:
            proc = self.inflight.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                       stdin=subprocess.DEVNULL)
        except InFlightClosed:
            raise Denied("db-sql: the agent's access is closed") from None
        try:
            out, err = proc.communicate(timeout=self.max_wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return ToolResult(1, "", f"db-sql: timed out after {self.max_wait:g} s\n", True, f"role {role}")
        finally:
            self.inflight.finish(proc)
        return ToolResult(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                          True, f"role {role}")

    # -- wait-until-healthy ------------------------------------------------------------------
    def wait_until_healthy(self, argv: Sequence[str]) -> ToolResult:
        timeout_text = None
        words = list(argv)
        while words:
            word = words.pop(0)
            if word == "--timeout" and words:
                timeout_text = words.pop(0)
            elif word.startswith("--timeout="):
                timeout_text = word.split("=", 1)[1]
            else:
                raise Failed("usage: wait-until-healthy [--timeout DURATION]")
        plan_timeout = duration_seconds(timeout_text, 60.0)
        real_timeout = min(max(plan_timeout * self.time_scale, MIN_HEALTH_WAIT_S), self.max_wait)
        started = time.monotonic()
        reason = "not probed yet"
        while time.monotonic() - started < real_timeout:
            reason = self.health()
            if not reason:
                # in plan seconds, as `sleep`, `time-left` and the --timeout count: the agent's one clock
                waited = (time.monotonic() - started) / self.time_scale
                return ToolResult(0, f"healthy after {waited:.1f} s\n", "", True, "")
            time.sleep(0.25)
        return ToolResult(1, "", f"wait-until-healthy: not healthy after {timeout_text or '1m'}: {reason}\n", True, "")

    def health(self) -> str:
        """"" when every service is ready and a message can be sent, else why not."""
        endpoints = self.target.endpoints()
        if endpoints is None:
            return "the stack is not running"
        exited = self.target.exited()  # its port stays open (the stack holds it): do not wait on it
        for name in endpoints.services:
            if name in exited:
                return f"{name} is not ready (its process has exited)"
        return self.target.substrate.health_problem(endpoints)  # readiness and the front door

    def _endpoints(self) -> Endpoints:
        endpoints = self.target.endpoints()
        if endpoints is None:
            raise Failed("the substrate is not running")
        return endpoints

    # -- time-left ---------------------------------------------------------------------------
    def time_left(self, argv: Sequence[str]) -> ToolResult:
        if argv:
            raise Failed("usage: time-left")
        clock = self.agent_clock
        if clock is None:
            raise Failed("time-left: there is no agent window (not in an episode)")
        elapsed = min(max(clock.now() - clock.opened_s, 0.0), clock.window_s)
        left = clock.window_s - elapsed
        return ToolResult(0, (
            f"elapsed {elapsed:.0f} s of your {clock.window_s:.0f} s window; {left:.0f} s left "
            "(plan seconds, as `sleep` counts them)\n"
            f"the window ends when you declare or when the time is up; the {clock.soak_s:.0f} s soak (traffic, "
            "no agent) follows either way: declaring early never shortens it\n"), "", True, "")

    # -- declare_repair_complete -------------------------------------------------------------
    def declare(self) -> ToolResult:
        if self.declared.is_set():
            return ToolResult(0, "the repair was already declared complete\n", "", True, "repeated")
        self.declared.set()
        if self.on_declare is not None:
            self.on_declare()
        return ToolResult(0, "repair declared complete\n", "", True, "")


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
