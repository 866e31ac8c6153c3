"""Child processes of a local substrate stack: spawn, stop by PID, ports, bounded waits.

Contract: every process the stack starts is a `Child` holding its own Popen; stopping one signals
exactly that PID (never a name or a process group), waits a bounded time and then kills it.
`PidLedger` records started PIDs with their start times on disk, so that a later stack in the same
directory can end leftovers of a crashed one without ever touching a recycled PID.
`DirLock` is an flock on `<dir>/stack.lock` held for a stack's lifetime: a second stack on the same
directory is refused (`DirectoryBusy`) while the first lives; the kernel drops the lock when its
holder dies, so a crashed stack never blocks the directory. `wait_until` polls with a deadline and
an optional cancellation check (`Cancelled`), so a stop requested during start-up ends the wait.
`write_private` writes files that carry credentials with mode 0600 from the first byte, atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil


@dataclass
class Child:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    user: str | None = None,
    pass_fds: Sequence[int] = (),
    cwd: Path | None = None,
    stdin_path: Path | None = None,
) -> Child:
    """Start `argv`; `stdin_path` is opened by the caller's user and becomes the child's standard
    input (a config the child's own, less privileged user cannot open)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log, open(stdin_path or os.devnull, "rb") as stdin:
        popen = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            **run_as(user),
            pass_fds=tuple(pass_fds),
            cwd=cwd,
            # own session: a Ctrl-C in the terminal reaches the stack, which then stops its
            # children in order, instead of every child at once
            start_new_session=True,
        )
    return Child(name, popen, log_path)


def run_as(user: str | None) -> dict[str, Any]:
    """Popen arguments that drop to `user` completely: its uid, its gid and no supplementary
    groups (keeping root's group would give it root's *group* permissions, not `others`')."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def stop(child: Child, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
    """Signal the child's PID, wait up to `timeout`, then SIGKILL and reap."""
    stop_all([(child, sig)], timeout)


def stop_all(children: Sequence[tuple[Child, int]], timeout: float = 10.0) -> None:
    """Signal every child at once (each its own signal), wait for all up to `timeout`,
    SIGKILL the ones still running, and reap them all."""
    for child, sig in children:
        if child.alive():
            child.popen.send_signal(sig)
            child.popen.send_signal(signal.SIGCONT)  # a stopped process acts on the signal only once continued
    deadline = time.monotonic() + timeout
    for child, _ in children:
        try:
            child.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.popen.kill()
            try:
                child.popen.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover - survives SIGKILL
                pass


# where free_port looks first: below the kernel's ephemeral range, which it never hands out to an
# outgoing connection (/proc/sys/net/ipv4/ip_local_port_range; 32768 is Linux's default start)
_PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_SERVER_PORT = 20000


def free_port() -> int:
    """A port free right now on 127.0.0.1, for a server that must bind it itself (PostgreSQL,
    Redis). Chosen below the ephemeral range: between this check and the server's bind (seconds,
    while the services start), a port from the ephemeral range can be taken by any outgoing
    connection, and a load generator beside it makes thousands (seen: PostgreSQL of one episode
    failing with "Address already in use" beside another). Falls back to the kernel's choice."""
    try:
        ephemeral_start = int(_PORT_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_start = 32768
    for _ in range(64):
        port = random.randrange(_LOWEST_SERVER_PORT, max(_LOWEST_SERVER_PORT + 1, ephemeral_start))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening_socket() -> socket.socket:
    """A socket listening on a free loopback port, to hand to a child process: the port can
    never be taken by someone else in between, and it survives the child's restarts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class ComponentFailed(RuntimeError):
    """A server or service exited while it was starting; `log_tail` says why."""

    def __init__(self, component: str, log_tail: str) -> None:
        super().__init__(f"{component} failed during start-up" + (f":\n{log_tail}" if log_tail else ""))
        self.component = component
        self.log_tail = log_tail


class Cancelled(Exception):
    """A wait ended early because its owner asked to stop (e.g. SIGTERM during start-up)."""


def wait_until(check: Callable[[], str], timeout: float, what: str, interval: float = 0.02,
               cancelled: Callable[[], bool] | None = None) -> None:
    """Poll `check` (returns "" when done, else why not) until done or `timeout`; raise TimeoutError,
    or Cancelled as soon as `cancelled()` is true."""
    deadline = time.monotonic() + timeout
    reason = check()
    while reason:
        if cancelled is not None and cancelled():
            raise Cancelled(f"stopped while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:g} s: {reason}")
        time.sleep(interval)
        reason = check()


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only (0600) from creation on, and atomically:
    a reader that waits for the file to exist (a ready file) never sees it empty or half written."""
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise


class DirectoryBusy(RuntimeError):
    """Another live stack owns the directory."""


class DirLock:
    """An exclusive flock on `<dir>/stack.lock`, held while a stack runs. The descriptor is not
    inherited by children (Python's default), so only the stack process itself holds it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "stack.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise DirectoryBusy(f"{self.path.parent} is in use by a running stack (pid {owner}); "
                                "stop it first or choose another directory") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None


class PidLedger:
    """PIDs a stack started, with their start times, in `<dir>/pids.json`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def record(self, children: Sequence[Child]) -> None:
        entries = {}
        for child in children:
            try:
                entries[child.name] = {"pid": child.pid, "started": psutil.Process(child.pid).create_time()}
            except psutil.NoSuchProcess:
                continue
        self.path.write_text(json.dumps(entries, indent=2, sort_keys=True))

    def end_leftovers(self) -> list[str]:
        """Stop processes a previous stack in this directory left running; returns their names."""
        if not self.path.exists():
            return []
        ended = []
        for name, entry in json.loads(self.path.read_text()).items():
            try:
                proc = psutil.Process(entry["pid"])
                if abs(proc.create_time() - entry["started"]) > 0.01:
                    continue  # the PID was recycled: not ours
                proc.terminate()
                try:
                    proc.wait(5)
                except psutil.TimeoutExpired:
                    proc.kill()
                ended.append(name)
            except psutil.NoSuchProcess:
                continue
        self.path.unlink()
        return ended

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def env_with(extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
