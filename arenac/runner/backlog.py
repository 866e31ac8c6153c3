"""The queue backlog over an episode (`backlog.json`, docs/evidence.md): the length of each of the
substrate's queues (its driver's `queues`, read by its `backlog` with the harness's hands: spine's
fan-out queue, through the fanout service's admin API), sampled once a real second and rewritten
as it grows, since live checks (a fault's manifestation) read it while the episode runs. A failed
sample (a restart window) is a gap in the samples, never a null in the file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from arenac.model.evidence import Backlog
from arenac.runner.clock import EpisodeClock
from arenac.runner.harness_io import HarnessIO
from arenac.runner.records import write_model


class BacklogSamples:
    def __init__(self, path: Path, clock: EpisodeClock, queues: tuple[str, ...]) -> None:
        self.path, self.clock = path, clock
        self.samples: dict[str, list[tuple[float, int]]] = {q: [] for q in queues}  # queue -> (t, length)
        self._lock = threading.Lock()

    def sample(self, io: HarnessIO, stop: threading.Event) -> None:
        """Sample until `stop` is set (run in a thread of its own)."""
        while not stop.is_set():
            for queue, samples in self.samples.items():
                try:
                    backlog = io.substrate.backlog(io, queue)
                except Exception:  # a restart window; the gap shows in the samples
                    continue
                samples.append((round(self.clock.now(), 3), backlog))
                self.write()
            if stop.wait(self.clock.real(1.0)):
                return

    def write(self) -> None:
        with self._lock:
            write_model(self.path, Backlog(queues={queue: tuple(samples) for queue, samples in self.samples.items()}))
