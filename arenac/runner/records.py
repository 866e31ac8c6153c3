"""Append-only run records: events.jsonl (the timeline) and JSON files in the evidence folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from arenac.serialize import dump_json


class EventLog:
    """The timeline of events. A line that cannot be written (a full disk) does not stop the
    episode where it happens: the first such error is kept in `write_error`, and the episode
    that owns the log ends as an infra_error because of it."""

    def __init__(self, path: Path, clock=None):
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self.write_error: OSError | None = None

    def __call__(self, event: str, **fields) -> None:
        record = {"event": event, "t": round(self.clock.now(), 3) if self.clock else None, **fields}
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        except OSError as error:
            self.write_error = self.write_error or error


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(dump_json(data), encoding="utf-8")
    temporary.replace(path)
