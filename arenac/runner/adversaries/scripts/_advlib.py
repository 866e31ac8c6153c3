"""What every adversarial strategy shares: logging each attempt, running the access tools, and
discovering the access surface from the tools themselves. Python standard library only; the
strategies run in the agent's working directory with this file beside them.

Nothing here knows a task or a fault: services, workloads, roles and tables are discovered.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

START = time.monotonic()
# a service name an admin API might answer to: the workloads' names when kubectl lists them, the
# services' command lines when visible, and the usual names of a web application's parts
COMMON_SERVICES = ("gateway", "api", "auth", "web", "frontend", "backend", "user", "users", "channel", "channels",
                   "message", "messages", "chat", "fanout", "worker", "queue", "notify", "search", "maintenance",
                   "scheduler", "cron", "billing", "orders", "payments", "inventory", "db", "cache")
WAIT = re.compile(r"^\s*(wait-until-healthy|sleep)\b|^\s*kubectl\s+(rollout\s+status|wait)\b")


def elapsed() -> float:
    return time.monotonic() - START


def log(*parts: object) -> None:
    print(f"[adversary {elapsed():6.1f}s]", *parts, flush=True)


# The line that tells the qualifier this strategy's attack found no door on the variant's surface
# (arenac/runner/adversaries: NO_DOOR): what it did besides (the golden fix) is then all it did.
NO_DOOR = "no door for the attack:"


def no_door(reason: str) -> None:
    """Say that the attack could not be tried here (e.g. no SQL route), and why."""
    log(NO_DOOR, reason)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."


def run(argv, stdin: str | None = None, timeout: float = 30.0, quiet: bool = False,
        merge: bool = False) -> tuple[int, str]:
    """Run a command (a list, or a string for sh -c); log it and its result; (exit code, stdout,
    or stdout and stderr with `merge`)."""
    shown = argv if isinstance(argv, str) else " ".join(shlex.quote(a) for a in argv)
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout,
                              shell=isinstance(argv, str), stdin=None if stdin is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        if not quiet:
            log("$", shown, "-> not available")
        return 127, ""
    except subprocess.TimeoutExpired:
        log("$", shown, f"-> timed out after {timeout:g}s")
        return 124, ""
    if not quiet:
        result = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        log("$", shown, f"-> {result}:", _short(done.stdout + " " + done.stderr))
    return done.returncode, (done.stdout + done.stderr) if merge else done.stdout


def has(tool: str) -> bool:
    return shutil.which(tool) is not None


def declare() -> None:
    log("declaring the repair complete")
    run(["declare_repair_complete"])


# ---- the access surface ------------------------------------------------------------------------
class Surface:
    """What this agent may touch, discovered from its tools (once, lazily)."""

    def __init__(self) -> None:
        self.tools = [t for t in ("kubectl", "admin-api", "db-sql", "wait-until-healthy") if has(t)]
        log("tools on PATH:", ", ".join(self.tools) or "none")
        self._workloads: dict[str, list[str]] | None = None
        self._admin: dict[str, list[str]] | None = None
        self._sql_routes: list[tuple[str, list[str]]] | None = None

    # kubectl
    def can_i(self) -> str:
        if "kubectl" not in self.tools:
            return ""
        return run(["kubectl", "auth", "can-i", "--list"])[1]

    def workloads(self) -> dict[str, list[str]]:
        """{kind: [name, ...]} for deployments, statefulsets, pods, configmaps kubectl may list."""
        if self._workloads is None:
            self._workloads = {}
            if "kubectl" in self.tools:
                for kind in ("deployments", "statefulsets", "pods", "configmaps"):
                    code, out = run(["kubectl", "get", kind, "-o", "name"])
                    self._workloads[kind] = [line.split("/", 1)[-1] for line in out.split() if "/" in line] \
                        if code == 0 else []
        return self._workloads

    def workload_matching(self, *words: str) -> str | None:
        """kind/name of a deployment or statefulset whose name contains one of the words."""
        found = self.workloads()
        for kind, short in (("statefulsets", "statefulset"), ("deployments", "deployment")):
            for name in found.get(kind, []):
                if any(w in name for w in words):
                    return f"{short}/{name}"
        return None

    # admin APIs
    def candidate_services(self) -> list[str]:
        names: list[str] = []
        for kind in ("deployments", "statefulsets"):
            for name in self.workloads().get(kind, []):
                names += [name, name.split("-")[-1]]
        for args in visible_cmdlines():
            for word in args[-3:]:
                if re.fullmatch(r"[a-z][a-z0-9-]{1,30}", word):
                    names.append(word)
        try:  # what the instruction talks about ("sending messages" -> send, message, messages)
            with open("instruction.md", encoding="utf-8") as handle:
                words = re.findall(r"[a-z]{3,20}", handle.read().lower())
        except OSError:
            words = []
        names += [w for word in words for w in (word, word.rstrip("s"))]
        names += COMMON_SERVICES
        return list(dict.fromkeys(names))

    def admin(self) -> dict[str, list[str]]:
        """{service: [granted paths]}: a request for a path nobody grants is denied with the list
        of the paths that are granted for a service the surface knows."""
        if self._admin is None:
            self._admin = {}
            if "admin-api" in self.tools:
                for service in self.candidate_services():
                    _code, text = run(["admin-api", service, "GET", "/adversary-probe"], quiet=True, merge=True)
                    match = re.search(r"granted paths: ([^)]*)\)", text)
                    if match:
                        self._admin[service] = [p.strip() for p in match.group(1).split(",") if p.strip()]
                log("admin APIs found:", json.dumps(self._admin))
        return self._admin

    def admin_call(self, service: str, method: str, path: str, body: object = None) -> tuple[int, object]:
        argv = ["admin-api", service, method, path] + ([json.dumps(body)] if body is not None else [])
        code, out = run(argv)
        try:
            return code, json.loads(out)
        except ValueError:
            return code, out

    # SQL
    def sql_routes(self) -> list[tuple[str, list[str]]]:
        """Ways to run SQL: ("db-sql", argv prefix) and ("exec", kubectl exec into a database workload)."""
        if self._sql_routes is None:
            self._sql_routes = []
            if "db-sql" in self.tools:
                code, out = run(["db-sql", "-A", "-t", "-c", "SELECT current_user"])
                if code == 0:
                    self._sql_routes.append((f"db-sql as {out.strip()}", ["db-sql", "-A", "-t", "-c"]))
            target = self.workload_matching("postgres", "pg", "database", "db")
            if target:
                prefix = ["kubectl", "exec", target, "--", "psql", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c"]
                code, out = run(prefix + ["SELECT current_user"])
                if code == 0:
                    self._sql_routes.append((f"exec {target} psql as {out.strip()}", prefix))
            log("SQL routes:", [name for name, _ in self._sql_routes] or "none")
        return self._sql_routes

    def sql(self, statement: str, timeout: float = 30.0) -> tuple[int, str]:
        """Run a statement by the first route that accepts it."""
        code, out = 1, ""
        for _, prefix in self.sql_routes():
            code, out = run(prefix + [statement], timeout=timeout)
            if code == 0:
                return code, out
        return code, out

    def sql_rows(self, statement: str) -> list[list[str]]:
        code, out = self.sql(statement)
        return [line.split("|") for line in out.splitlines() if line.strip()] if code == 0 else []

    # Redis
    def redis(self) -> list[str] | None:
        target = self.workload_matching("redis", "cache")
        if not target:
            return None
        prefix = ["kubectl", "exec", target, "--", "redis-cli"]
        code, _out = run(prefix + ["PING"])
        return prefix if code == 0 else None


def visible_cmdlines() -> list[list[str]]:
    """The command lines of every process this agent can see (its own included)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    args = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
            except OSError:
                continue
            if args:
                found.append(args)
    return found


# ---- the answer key (for the strategies the runner hands it to) ---------------------------------
def answer_key(path: str = "solve.sh") -> tuple[list[str], list[str]]:
    """(commands, removed waits) of the golden fix in the working directory, without
    `set`, comments, waits and the declaration."""
    if not os.path.exists(path):
        log("no answer key in the working directory")
        return [], []
    commands, waits = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            text = line.strip()
            if not text or text.startswith("#") or text.startswith("set "):
                continue
            if WAIT.search(text):
                waits.append(text)
            elif text != "declare_repair_complete":
                commands.append(text)
    return commands, waits


def apply_answer_key() -> bool:
    commands, waits = answer_key()
    for wait in waits:
        log("skipping the wait:", wait)
    ok = True
    for command in commands:
        ok = run(command, timeout=120)[0] == 0 and ok
    return ok


def main(strategy) -> None:
    """Run a strategy; whatever it raises, log it and declare (every strategy ends declaring)."""
    try:
        strategy()
    except Exception as error:  # an attack that crashes still ends with a declaration
        log(f"the strategy failed: {type(error).__name__}: {error}")
    declare()
    sys.stdout.flush()
