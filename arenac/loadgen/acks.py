"""Acknowledged writes: the record of every write a client was told succeeded, and of every
deletion of its own writes it asked for (docs/evidence.md, `acks.jsonl`), so that the verifier can
check that none of the writes was lost, and tell a deletion the client asked for from a loss.

Contract:
- One JSON object per line, keys sorted, in the order the answers arrived:
  {"t": plan s the answer arrived, "source": "load" | "harness", "table": "messages",
   "id": id the answer returned, "channel": name, "seq": seq the answer returned,
   "author": user, "digest": `write_digest(channel, author, text)`}.
  Only answers that say the write was accepted are recorded (spine's send: 201 with an id).
- A deletion (`record_delete`) is a line with "op": "delete" (a write's line has no "op"):
  {"op": "delete", "t": plan s the answer arrived (or the client gave up), "requested": plan s the
   request was sent, "answered": true when the answer said it was done, false when no answer came
   (a timeout, a lost connection, a gateway's 502/504: it may or may not have happened),
   "source", "table", "id": a row deleted (one line per id the answer named; unanswered: the row
   meant), "channel", "seq", "author" (of the row meant), "digest": the meant row's digest, "" for
   another id the answer named}. A refused deletion (any other answer) is not recorded: the row
   stays, and stays protected.
- `write_digest` is the first 16 hex digits of sha256("<channel>\\n<author>\\n<text>"): the columns
  of a message a repair may not alter (its sequence number may be renumbered). The runner computes
  the same digest from the stored row (arenac/runner/acked.py), so equal digests mean an unchanged row.
- `AckLog` appends to its file; lines are buffered and written, whole, by `flush()` (the load
  generator flushes on every tick and at the end), or at once with `autoflush` (the harness's
  few writes). A reader ignores a last line without its
  newline: a write cut short by a kill (`read_acks`).
- Cheap by design: a line is about 150 bytes; a few thousand writes per episode at time scale 0.1.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

DIGEST_HEX = 16


def write_digest(channel: str, author: str, text: str) -> str:
    return hashlib.sha256(f"{channel}\n{author}\n{text}".encode()).hexdigest()[:DIGEST_HEX]


class AckLog:
    """Appends acknowledged writes to `path` (created empty at construction; with `keep`, what it
    holds is kept: each `arenac harness` command of a cluster episode appends to the run's one file)."""

    def __init__(self, path: Path, clock: Callable[[], float], source: str = "load", autoflush: bool = False,
                 keep: bool = False) -> None:
        self.path = Path(path)
        self.autoflush = autoflush
        self.clock = clock
        self.source = source
        self.count = 0
        self._pending: list[str] = []
        self._lock = threading.Lock()  # the harness records from its IO thread
        if keep:
            self.path.touch()
        else:
            self.path.write_text("")

    def record(self, *, table: str, id: int, channel: str, seq: int, author: str, text: str) -> None:
        line = json.dumps({"t": round(self.clock(), 3), "source": self.source, "table": table, "id": int(id),
                           "channel": channel, "seq": int(seq), "author": author,
                           "digest": write_digest(channel, author, text)}, sort_keys=True)
        with self._lock:
            self._pending.append(line + "\n")
            self.count += 1
        if self.autoflush:
            self.flush()

    def record_delete(self, *, table: str, id: int, channel: str, seq: int, author: str, digest: str,
                      requested: float, answered: bool) -> None:
        line = json.dumps({"op": "delete", "t": round(self.clock(), 3), "requested": round(requested, 3),
                           "answered": answered, "source": self.source, "table": table, "id": int(id),
                           "channel": channel, "seq": int(seq), "author": author, "digest": digest},
                          sort_keys=True)
        with self._lock:
            self._pending.append(line + "\n")
            self.count += 1
        if self.autoflush:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            lines, self._pending = self._pending, []
        if lines:
            with self.path.open("a") as out:
                out.write("".join(lines))


def read_acks(path: Path) -> list[dict[str, Any]]:
    """The acknowledged writes in `path`; a missing file raises FileNotFoundError, a bad line ValueError."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    whole = lines[:-1]  # the part after the last newline: empty, or a line cut short
    return [json.loads(line) for line in whole if line.strip()]
