"""What `arenac campaign` shows while it runs: trials done, running and left, the pass rate so far
and an estimate of the time left.

Contract:
- `CampaignProgress(total, jobs, stream)`: `start(trial)` when a trial's episode starts,
  `done(trial, row, reused)` when it ends (row None: left for a rerun). Safe from several threads.
- On a terminal (`stream.isatty()`), a live status line redrawn in place (rich), with each
  finished trial printed above it. Anywhere else (a pipe, a CI log), one plain line per finished
  trial and nothing redrawn: `[done/total] AGENT on VARIANT #N: STATUS, reward R (W s)`.
- The pass rate counts scored trials only (void and infra_error are excluded, as in the
  statistics); the time left is the mean wall time of the trials run so far in this invocation
  times the trials left, over `jobs` (reused trials took no time and are not in the mean).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TextIO

from arenac.campaign.run import PlannedTrial
from arenac.model.campaign import TrialRow

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live


class CampaignProgress:
    def __init__(self, total: int, jobs: int, stream: TextIO) -> None:
        self.total, self.jobs, self.stream = total, max(1, jobs), stream
        self.finished = self.running = self.left_over = 0
        self.scored = self.passes = 0
        self.walls: list[float] = []
        self._started: set[int] = set()  # the trials running (by identity: the plan holds each once)
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._console: Console | None = None

    def __enter__(self) -> CampaignProgress:
        if self.stream.isatty():
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.stream)
            from rich.text import Text

            self._live = Live(get_renderable=lambda: Text(self.status(), no_wrap=True, overflow="ellipsis"),
                              console=self._console, refresh_per_second=2, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def start(self, trial: PlannedTrial) -> None:
        with self._lock:
            self._started.add(id(trial))
            self.running += 1

    def done(self, trial: PlannedTrial, row: TrialRow | None, reused: bool) -> None:
        with self._lock:
            if id(trial) in self._started:
                self._started.remove(id(trial))
                self.running -= 1
            if row is None:
                self.left_over += 1
            elif not reused:
                self.walls.append(row.wall_s)
            self.finished += 1
            if row is not None and row.status in ("scored", "failed"):
                self.scored += 1
                self.passes += row.reward
            line = self.line(trial, row, reused)
        if self._console is not None:
            self._console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def line(self, trial: PlannedTrial, row: TrialRow | None, reused: bool) -> str:
        head = f"[{self.finished}/{self.total}] {trial.label}"
        if row is None:
            return f"{head}: left (interrupted or not started; rerun to run it)"
        why = f" ({row.reason})" if row.reason and row.status != "scored" else ""
        retried = f", {row.attempts} attempts" if row.attempts > 1 else ""
        took = "reused" if reused else f"{row.wall_s:.1f} s"
        return f"{head}: {row.status}{why}, reward {row.reward} ({took}{retried})"

    def status(self) -> str:
        with self._lock:
            left = self.total - self.finished - self.running
            rate = (f"{self.passes}/{self.scored} passed ({self.passes / self.scored:.0%})" if self.scored
                    else "none scored yet")
            eta = ""
            if self.walls:
                seconds = sum(self.walls) / len(self.walls) * (left + self.running) / self.jobs
                eta = f", about {_duration(seconds)} left"
            return f"campaign: {self.finished} done, {self.running} running, {left} to start; {rate}{eta}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else (f"{minutes} min {secs:02d} s" if minutes else f"{secs} s")
