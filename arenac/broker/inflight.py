"""Processes that tool calls started and that have not finished yet.

Contract: `InFlight.start(argv, **popen)` starts a process in a session of its own and tracks it
until `finish(proc)`; `end_all()` kills every tracked session at once and refuses every later start
(`InFlightClosed`). The runner calls it at the freeze: a tool call made before the declaration
must not keep acting after it (a `db-sql` holding `pg_sleep` connections or locks, an exec's
background loop), because everything the substrate does after the freeze counts as the repair's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading


class InFlightClosed(Exception):
    """The agent's access is closed: no new process is started for it."""


class InFlight:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._closed = False

    def start(self, argv: list[str], **popen) -> subprocess.Popen:
        with self._lock:
            if self._closed:
                raise InFlightClosed("the agent's access is closed")
            proc = subprocess.Popen(argv, start_new_session=True, **popen)
            self._running.add(proc)
            return proc

    def finish(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(proc)

    def end_all(self) -> int:
        """Kill every tracked process's session; returns how many were still running."""
        with self._lock:
            self._closed = True
            running = [p for p in self._running if p.poll() is None]
            for proc in running:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return len(running)
