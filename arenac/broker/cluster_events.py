"""The local cluster's Events (what it did: rollouts, restarts, failed image pulls), as
`kubectl get events` and `describe` show them: a repeat of the last event counts up instead of
adding one, and only the last 500 are kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

KEPT = 500


def timestamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class _Event:
    kind: str
    name: str
    type: str
    reason: str
    message: str
    first: float
    last: float
    count: int = 1


@dataclass
class ClusterEvents:
    _events: list[_Event] = field(default_factory=list)

    def record(self, kind: str, name: str, type_: str, reason: str, message: str) -> None:
        now = time.time()
        last = self._events[-1] if self._events else None
        if last and (last.kind, last.name, last.reason, last.message) == (kind, name, reason, message):
            last.count, last.last = last.count + 1, now
            return
        self._events.append(_Event(kind, name, type_, reason, message, now, now))
        del self._events[:-KEPT]

    def objects(self, namespace: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """The Event objects (of one involved object's kind and name, when given), oldest first."""
        out = []
        for i, e in enumerate(self._events):
            if (kind and e.kind != kind) or (name and e.name != name):
                continue
            out.append({"apiVersion": "v1", "kind": "Event",
                        "metadata": {"name": f"{e.name}.{i:08x}", "namespace": namespace,
                                     "creationTimestamp": timestamp(e.first)},
                        "involvedObject": {"kind": e.kind, "name": e.name, "namespace": namespace},
                        "type": e.type, "reason": e.reason, "message": e.message, "count": e.count,
                        "firstTimestamp": timestamp(e.first), "lastTimestamp": timestamp(e.last)})
        return out
