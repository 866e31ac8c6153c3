"""The evidence bundle (RUN_DIR/evidence/) as typed, lazily loaded models.

The files' shapes are arenac/model/evidence.py, the models the runner writes them from.

Contract (docs/evidence.md):
- Every file is read on first use, so a run is graded from exactly the files its gates
  need: a task without a backlog predicate needs no backlog.json (nor one without `runs` runs.json). A file that is
  needed but missing, not JSON, or not of the documented shape raises `EvidenceError`
  naming the file and the field; nothing here returns a partial answer.
- Unknown fields are refused (extra="forbid"): the runner writes from these very models, so a
  field the verifier does not know is a file it cannot trust; documented fields are required
  and typed.
- Snapshots carry no time in the contract; `snapshot_time` places them on the plan
  clock: baseline at the end of the warm-up, agent_start at the handover to the agent (after
  every fault manifested), declaration at the declaration (or the end of the
  agent window), soak_end at the end of the soak, after_restart / after_retrigger at the
  end of the challenge's re-check window. A snapshot file may carry its own `"t"`, which
  then wins.
- harness_changes.json lists what the harness itself changed after the agent started (a fault
  re-fired by its recurrence, a periodic or `when` onset): the scope check does not blame the agent
  for those targets. Absent means the harness changed nothing then.
- A void or infra_error timeline may stop at any point, so its times are optional; a
  scored one must have them all (but `declared_s`, null when the agent never declared).
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Literal, TypeVar, overload

from pydantic import BaseModel, ValidationError

from arenac.model.baseline import Baseline
from arenac.model.evidence import Backlog, ChallengeRecord, HarnessChanges, JobRuns, Ledger, Snapshot, Timeline


class EvidenceError(Exception):
    """The evidence (or the gates) cannot be read: an infrastructure problem, never the agent's."""


M = TypeVar("M", bound=BaseModel)


def read_model(path: Path, model: type[M], label: str | None = None) -> M:
    """Read one JSON file into a model, or raise EvidenceError with a one-line reason."""
    label = label or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvidenceError(f"{label}: missing ({path})") from None
    except OSError as error:
        raise EvidenceError(f"{label}: cannot read: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise EvidenceError(f"{label}: not valid JSON: {error}") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        raise EvidenceError(f"{label}: {where}: {first['msg']}{more}") from None


class Evidence:
    """One evidence directory; each file is parsed once, on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise EvidenceError(f"no evidence directory at {self.directory}")
        self._snapshots: dict[str, Snapshot | None] = {}

    def _read(self, name: str, model: type[M]) -> M:
        return read_model(self.directory / name, model, f"evidence/{name}")

    @cached_property
    def timeline(self) -> Timeline:
        return self._read("timeline.json", Timeline)

    @cached_property
    def ledger(self) -> Ledger:
        return self._read("ledger.json", Ledger)

    @cached_property
    def baseline(self) -> Baseline:
        return self._read("baseline.json", Baseline)

    @cached_property
    def backlog(self) -> Backlog:
        return self._read("backlog.json", Backlog)

    @cached_property
    def runs(self) -> JobRuns:
        return self._read("runs.json", JobRuns)

    @cached_property
    def challenges(self) -> ChallengeRecord:
        return self._read("challenges.json", ChallengeRecord)

    @cached_property
    def harness_changes(self) -> HarnessChanges:
        if not (self.directory / "harness_changes.json").exists():
            return HarnessChanges(changes=())
        return self._read("harness_changes.json", HarnessChanges)

    @overload
    def snapshot(self, label: str, required: Literal[True] = True) -> Snapshot: ...
    @overload
    def snapshot(self, label: str, required: bool) -> Snapshot | None: ...

    def snapshot(self, label: str, required: bool = True) -> Snapshot | None:
        """The snapshot with this label; None when it is absent and not required."""
        if label not in self._snapshots:
            path = self.directory / "snapshots" / f"{label}.json"
            if not path.exists() and not required:
                self._snapshots[label] = None
            else:
                self._snapshots[label] = read_model(path, Snapshot, f"evidence/snapshots/{label}.json")
        snapshot = self._snapshots[label]
        if snapshot is None and required:
            raise EvidenceError(f"evidence/snapshots/{label}.json: missing")
        return snapshot

    def snapshot_time(self, label: str, snapshot: Snapshot) -> float | None:
        """When the snapshot was taken: its own time, else (older runs) the clock mark of its label."""
        if snapshot.t is not None:
            return snapshot.t
        timeline = self.timeline
        if label == "baseline":
            return timeline.warmup_end_s
        if label == "agent_start":
            return timeline.handover_s
        if label == "declaration":
            return timeline.declared_s if timeline.declared_s is not None else timeline.window_end_s
        return self.closing_mark(label)

    def snapshot_read_until(self, label: str, snapshot: Snapshot) -> float | None:
        """The latest moment whose doings the snapshot may hold: when its reads ended (older runs:
        when it was taken). A client's deletion asked for up to then may be in what it read."""
        if snapshot.read_until is not None:
            return snapshot.read_until
        return self.snapshot_time(label, snapshot)

    def closing_mark(self, label: str) -> float | None:
        """The end of the window a snapshot of this label closes (soak_end: the soak's; after_restart
        and after_retrigger: their re-check window's), None for the other labels or when the run has
        no such window. Such a snapshot is taken a moment after that end, once the sleep to it has
        returned, and still belongs to the window (a metric over it reads it)."""
        if label == "soak_end":
            return self.timeline.soak_end_s
        if label in ("after_restart", "after_retrigger"):
            window = getattr(self.challenges, label)
            return window.end_s if window is not None else None
        return None
