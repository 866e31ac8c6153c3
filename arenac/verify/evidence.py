"""The evidence bundle (RUN_DIR/evidence/) as typed, lazily loaded models.

Contract (docs/evidence.md):
- Every file is read on first use, so a run is graded from exactly the files its gates
  need: a task without a backlog predicate needs no backlog.json. A file that is
  needed but missing, not JSON, or not of the documented shape raises `EvidenceError`
  naming the file and the field; nothing here returns a partial answer.
- Unknown fields are ignored (the runner may record more than the verifier reads);
  documented fields are required and typed.
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
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from arenac.model.gates import Gates
from arenac.model.plan import Challenges

SNAPSHOT_LABELS = ("baseline", "agent_start", "declaration", "soak_end", "after_restart", "after_retrigger")


class EvidenceError(Exception):
    """The evidence (or the gates) cannot be read: an infrastructure problem, never the agent's."""


class EvidenceModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class TimelineHeadroom(EvidenceModel):
    """What the harness had of the machine during the episode, in short (runner/headroom.py; the
    figures are in headroom.json). Never read by a gate: an overloaded trial is not scored at all."""

    overloaded: bool
    timer_p99_ms: float | None = None
    loadgen_p99_start_lag_ms: float | None = None
    episode_cpu_cores: float | None = None
    episode_pressure_share: float | None = None
    machine_psi_share: float | None = None
    own_load: bool = False  # overloaded by the episode's own processes: still scored (headroom.apply)


class Timeline(EvidenceModel):
    """A void or infra_error trial may have ended before any of the times was reached."""

    time_scale: float
    status: Literal["scored", "failed", "void", "infra_error"]
    void_reason: str | None = None
    warmup_end_s: float | None = None
    handover_s: float | None = None
    declared_s: float | None = None
    window_end_s: float | None = None
    soak_start_s: float | None = None
    soak_end_s: float | None = None
    bound_by: str | None = None  # what bound the episode's processes to its lifetime (runner/lifetime.py)
    headroom: TimelineHeadroom | None = None  # absent in runs from before the headroom probe

    @model_validator(mode="after")
    def _scored_has_times(self) -> "Timeline":
        if self.status == "scored":
            missing = [name for name in ("warmup_end_s", "handover_s", "window_end_s", "soak_start_s", "soak_end_s")
                       if getattr(self, name) is None]
            if missing:
                raise ValueError(f"a scored trial needs {', '.join(missing)}")
        return self


class LedgerPhase(EvidenceModel):
    name: str
    start_s: float
    end_s: float


class LedgerSecond(EvidenceModel):
    t: float
    phase: str
    route: str
    count: int
    errors: int
    hist: str  # base64 HdrHistogram encoding, latencies in microseconds

    @model_validator(mode="after")
    def _counts(self) -> "LedgerSecond":
        if not 0 <= self.errors <= self.count:
            raise ValueError(f"errors ({self.errors}) must lie between 0 and count ({self.count})")
        return self


class Ledger(EvidenceModel):
    profile: dict[str, Any] = {}
    time_scale: float
    client_timeout_s: float
    phases: tuple[LedgerPhase, ...]
    seconds: tuple[LedgerSecond, ...]


class BaselineFigures(EvidenceModel):
    error_rate: float | None = None
    goodput_rps: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    requests: int | None = None


class Baseline(EvidenceModel):
    routes: dict[str, dict[str, BaselineFigures]]


class Backlog(EvidenceModel):
    queues: dict[str, tuple[tuple[float, float], ...]]


class ChallengeRestart(EvidenceModel):
    service: str
    t: float
    ok: bool


class ChallengeRetrigger(EvidenceModel):
    fault: str
    t: float
    ok: bool


class RecordedWindow(EvidenceModel):
    start_s: float
    end_s: float


class ChallengeRecord(EvidenceModel):
    restart: tuple[ChallengeRestart, ...] = ()
    retrigger: tuple[ChallengeRetrigger, ...] = ()
    after_restart: RecordedWindow | None = None
    # not in docs/evidence.md yet: the traffic window re-checked after the retriggers, when the
    # runner retriggers after the soak; without it the verifier uses the soak after the last one
    after_retrigger: RecordedWindow | None = None


class TableState(EvidenceModel):
    rows: int
    checksum: str


class SequenceState(EvidenceModel):
    groups: int
    rows: int
    duplicates: int
    gaps: int


class Snapshot(EvidenceModel):
    """One snapshot (docs/evidence.md). `roles`, `memberships` and `privileges` are new in
    format 2; a format-1 snapshot has `grants` (the application role's table privileges) instead,
    which reads as the same items, so old runs still grade."""

    t: float | None = None
    config: dict[str, dict[str, Any]]
    configmaps: dict[str, dict[str, str]] = {}  # workload -> what its ConfigMap holds (format 2)
    events: dict[str, tuple[str, ...]]
    release: dict[str, str]
    db_settings: dict[str, Any]
    app_role: str = "spine_app"
    roles: dict[str, dict[str, Any]] = {}  # role -> attribute -> value
    memberships: dict[str, str] = {}  # "MEMBER.ROLE" -> options
    privileges: dict[str, dict[str, tuple[str, ...]]] = {}  # grantee -> object -> privileges
    grants: dict[str, tuple[str, ...]] = {}  # format 1 only
    redis: dict[str, Any]
    tables: dict[str, TableState]
    sequences: dict[str, SequenceState]


class HarnessChange(EvidenceModel):
    """One harness action after the agent started: when, what, and the targets it may change."""

    t: float
    what: str
    targets: tuple[str, ...]


class HarnessChanges(EvidenceModel):
    changes: tuple[HarnessChange, ...]


class GatesFile(EvidenceModel):
    """verifier/gates.json of a bundle (and its copy in the evidence)."""

    task: str | None = None
    variant: str | None = None
    baseline: str | None = None
    gates: Gates
    challenges: Challenges | None = None


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
    def challenges(self) -> ChallengeRecord:
        return self._read("challenges.json", ChallengeRecord)

    @cached_property
    def harness_changes(self) -> HarnessChanges:
        if not (self.directory / "harness_changes.json").exists():
            return HarnessChanges(changes=())
        return self._read("harness_changes.json", HarnessChanges)

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
        if snapshot.t is not None:
            return snapshot.t
        timeline = self.timeline
        if label == "baseline":
            return timeline.warmup_end_s
        if label == "agent_start":
            return timeline.handover_s
        if label == "declaration":
            return timeline.declared_s if timeline.declared_s is not None else timeline.window_end_s
        if label == "soak_end":
            return timeline.soak_end_s
        if label in ("after_restart", "after_retrigger"):
            window = getattr(self.challenges, label)
            return window.end_s if window is not None else None
        return None  # pragma: no cover (labels are fixed)
