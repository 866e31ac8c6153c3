"""Append-only run records: events.jsonl (the timeline) and JSON files in the evidence folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from arenac.serialize import dump_json, write_atomic


class EventLog:
    def __init__(self, path: Path, clock=None):
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()

    def __call__(self, event: str, **fields) -> None:
        record = {"event": event, "t": round(self.clock.now(), 3) if self.clock else None, **fields}
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")


def write_json(path: Path, data) -> None:
    """Canonical JSON, written atomically and durably (serialize.write_atomic): a reader, or the
    next runner after a crash, sees the old record or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump_json(data))
