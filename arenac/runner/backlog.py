"""What the episode samples of the substrate about once a plan second (docs/evidence.md), each rewritten
as it grows, since live checks (a fault's manifestation) read it while the episode runs:

- `backlog.json`: the length of each of the substrate's queues (its driver's `queues`, read by its
  `backlog` with the harness's hands: spine's fan-out queue, through the fanout service's admin API);
- `runs.json`: the runs each of its periodic jobs completed (its driver's `jobs`, read by its `runs`:
  spine's maintenance job, through the maintenance service's admin API), a count since the job's
  service started, which the verifier turns into runs per window (verify/metrics.py), and the runs
  that failed, with their errors (why a window holds fewer runs than the schedule promised).

A failed sample (a restart window) is a gap in the samples, never a null in the file.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from arenac.model.evidence import Backlog, EvidenceModel, FailedRun, JobRuns
from arenac.runner.clock import EpisodeClock
from arenac.runner.harness_io import HarnessIO
from arenac.runner.records import write_model

_Series = dict[str, tuple[tuple[float, int], ...]]


class Samples:
    """Named integer readings, each `read(io, name)`, written as `record(series)` to `path`."""

    def __init__(self, path: Path, clock: EpisodeClock, names: tuple[str, ...],
                 read: Callable[[HarnessIO, str], int], record: Callable[[_Series], EvidenceModel]) -> None:
        self.path, self.clock = path, clock
        self.samples: dict[str, list[tuple[float, int]]] = {name: [] for name in names}  # name -> (t, value)
        self._read, self._record = read, record
        self._lock = threading.Lock()

    def sample(self, io: HarnessIO, stop: threading.Event) -> None:
        """Sample until `stop` is set (run in a thread of its own)."""
        while not stop.is_set():
            for name, samples in self.samples.items():
                try:
                    value = self._read(io, name)
                except Exception:  # a restart window; the gap shows in the samples
                    continue
                samples.append((round(self.clock.now(), 3), value))
                self.write()
            if stop.wait(self.clock.real(1.0)):
                return

    def write(self) -> None:
        with self._lock:
            write_model(self.path, self._record({name: tuple(samples) for name, samples in self.samples.items()}))


class BacklogSamples(Samples):
    """backlog.json: each queue's length."""

    def __init__(self, path: Path, clock: EpisodeClock, queues: tuple[str, ...]) -> None:
        super().__init__(path, clock, queues, lambda io, queue: io.substrate.backlog(io, queue),
                         lambda series: Backlog(queues=series))


class JobRunSamples(Samples):
    """runs.json: each periodic job's completed runs since its service started, and every failed run
    its service listed while sampled (each once, by its start, placed on the plan clock)."""

    def __init__(self, path: Path, clock: EpisodeClock, jobs: tuple[str, ...]) -> None:
        self.failed: dict[str, dict[float, FailedRun]] = {job: {} for job in jobs}  # job -> start (Unix) -> run
        super().__init__(path, clock, jobs, self._read_job, self._record_runs)

    def _read_job(self, io: HarnessIO, job: str) -> int:
        reading = io.substrate.runs(io, job)
        now_unix, now_plan = time.time(), self.clock.now()
        with self._lock:  # a final write() may run in another thread
            for run in reading.failed:
                started = round(now_plan - self.clock.plan(now_unix - run.start_unix), 3)
                self.failed[job].setdefault(run.start_unix, FailedRun(t=started, error=run.error))
        return reading.completed

    def _record_runs(self, series: _Series) -> JobRuns:
        failed = {job: tuple(sorted(runs.values(), key=lambda run: run.t)) for job, runs in self.failed.items() if runs}
        return JobRuns(jobs=series, failed=failed)
