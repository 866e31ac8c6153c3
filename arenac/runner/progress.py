"""Live progress of an episode on the terminal: phase, elapsed time, current error rate and p99.

It reads only what the episode already writes (events.jsonl and the load generator's live
view), once a second, from a thread; the episode never waits for it. On a terminal it is one
line rewritten in place; otherwise (a pipe, a file, CI's log) one whole line per phase, each
ending in a newline, so nothing is glued to what is printed after it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live

from arenac.loadgen.ledger import LiveView

_WINDOW_S = 10.0  # plan seconds of traffic behind the figures


def _last_event(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 2048))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
        return json.loads(lines[-1])["event"] if lines else "starting"
    except (OSError, ValueError, KeyError, IndexError):
        return "starting"


def status_line(run_dir: Path, started: float) -> str:
    phase = _last_event(run_dir / "events.jsonl")
    line = f"{phase:<16} {time.monotonic() - started:6.1f} s"
    try:
        view = LiveView.read(run_dir / "live.json")
        live = view.current(_WINDOW_S)
        line += f"   plan t {view.now:7.1f}   error rate {live.error_rate:6.1%}   p99 {live.p99_s * 1000:8.1f} ms"
    except (OSError, ValueError, KeyError):
        line += "   (no traffic yet)"
    return line


class Progress:
    """`with Progress(run_dir):` shows a live status line until the block ends."""

    def __init__(self, run_dir: Path, console: Console | None = None):
        self.run_dir = run_dir
        self.console = console or Console(stderr=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._show, daemon=True, name="arenac-progress")

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _show(self) -> None:
        started = time.monotonic()
        if not self.console.is_terminal:
            self._show_lines(started)
            return
        with Live(console=self.console, refresh_per_second=2, transient=False) as live:
            while not self._stop.wait(1.0):
                live.update(status_line(self.run_dir, started))
            live.update(status_line(self.run_dir, started))

    def _show_lines(self, started: float) -> None:
        shown = ""
        while True:
            stopping = self._stop.wait(1.0)
            phase = _last_event(self.run_dir / "events.jsonl")
            if phase != shown:
                shown = phase
                self.console.print(status_line(self.run_dir, started), highlight=False, soft_wrap=True)
            if stopping:
                return
