"""The evidence bundle's files (RUN_DIR/evidence/, docs/evidence.md) as models: the one definition
of each file's shape, constructed by the runner and the load generator, read by the verifier.

Contract:
- Unknown fields are refused (base.Model, extra="forbid"): what a writer adds must be added here
  first, so a reader never silently skips a field it was meant to see. Documented fields are typed.
- A file's text is canonical JSON of `model.model_dump(mode="json")` (runner/records.py
  `write_model`). A field named in a model's `omitted_when_empty` (record.Record) is left out while
  it holds nothing: the file format says "absent" for it (a time a void trial never reached, the
  configmaps of a snapshot taken without the stack, the format-1 `grants`), and readers treat
  absent and empty alike. Every other field is always written, null included.
- Times are plan seconds since the episode clock's zero. A void or infra_error timeline may stop
  at any point, so its times are optional; a scored one must have them all (but `declared_s`,
  null when the agent never declared).
- A snapshot file may carry its own `t`; without it the verifier places it on the plan clock by
  its label (arenac/verify/evidence.py, `snapshot_time`).
- harness_changes.json lists what the harness itself changed after the agent started (a fault
  re-fired by its recurrence, a periodic or `when` onset); absent means it changed nothing then.
- baseline.json is the calibration record of the task's load profile, copied: its models live in
  arenac/model/baseline.py (the compiler's void check reads it too, without the evidence models).
- The acknowledged writes of acks.jsonl are written by the load generator line by line, in its
  hot path, as plain JSON (arenac/loadgen/acks.py); `AckedWrite` is the shape of one line.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, JsonValue, ValidationError, model_validator

from arenac.model.actions import Target
from arenac.model.gates import Gates
from arenac.model.plan import Challenges
from arenac.model.record import Record

SNAPSHOT_LABELS = ("baseline", "agent_start", "declaration", "soak_end", "after_restart", "after_retrigger")
TrialStatus = Literal["scored", "failed", "void", "infra_error"]


class EvidenceModel(Record):
    """An evidence file or a part of one."""


# ---- timeline.json ------------------------------------------------------------------------------
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
    """The episode's clock marks and how it ended. The runner carries it through the episode (a
    frozen model, `begun` at the start and replaced as the marks are reached) and writes it,
    `finished`, at the end."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset(
        {"warmup_end_s", "handover_s", "window_end_s", "soak_start_s", "soak_end_s", "bound_by", "headroom",
         "faults_injected"})

    time_scale: float
    status: TrialStatus
    void_reason: str | None = None  # why a trial is not scored, or failed
    warmup_end_s: float | None = None
    handover_s: float | None = None
    declared_s: float | None = None  # null: the agent never declared (always written)
    window_end_s: float | None = None
    soak_start_s: float | None = None
    soak_end_s: float | None = None
    bound_by: str | None = None  # what bound the episode's processes to its lifetime (runner/lifetime.py)
    headroom: TimelineHeadroom | None = None  # absent in runs from before the headroom probe
    # False: the healthy control, which injects nothing (a check on a fault's own state has nothing
    # to judge); absent (written only for the healthy control) when the faults were injected
    faults_injected: bool | None = None

    @model_validator(mode="after")
    def _scored_has_times(self) -> Timeline:
        if self.status == "scored":
            missing = [name for name in ("warmup_end_s", "handover_s", "window_end_s", "soak_start_s", "soak_end_s")
                       if getattr(self, name) is None]
            if missing:
                raise ValueError(f"a scored trial needs {', '.join(missing)}")
        return self

    @classmethod
    def begun(cls, time_scale: float, bound_by: str, healthy: bool = False) -> Timeline:
        """An episode's timeline at its start: scored until something ends it otherwise, its marks
        still to come. Not validated (a scored trial without its times is what it is until the
        soak ends); `finished` validates it before it is written."""
        return cls.model_construct(time_scale=time_scale, status="scored", void_reason=None, declared_s=None,
                                   bound_by=bound_by, faults_injected=False if healthy else None)

    def ended(self, status: TrialStatus, reason: str) -> Timeline:
        """The same timeline, ended with `status` for `reason`."""
        return self.model_copy(update={"status": status, "void_reason": reason})

    def finished(self) -> Timeline:
        """The timeline to write: validated as the verifier will read it. A scored one that lacks a
        mark (a harness bug, never the agent's doing) becomes an infra_error saying which."""
        try:
            return Timeline.model_validate(self.model_dump())
        except ValidationError as error:
            return self.ended("infra_error", f"the harness recorded an incomplete timeline: {error.errors()[0]['msg']}")


# ---- ledger.json (the load generator) ---------------------------------------------------------
class LedgerPhase(EvidenceModel):
    name: str
    start_s: float
    end_s: float


class LedgerSecond(EvidenceModel):
    """The requests scheduled in one whole plan second on one route."""

    t: int  # the second's start
    phase: str  # the phase that second belongs to
    route: str
    count: int
    errors: int
    hist: str  # base64 HdrHistogram encoding, latencies in microseconds

    @model_validator(mode="after")
    def _counts(self) -> LedgerSecond:
        if not 0 <= self.errors <= self.count:
            raise ValueError(f"errors ({self.errors}) must lie between 0 and count ({self.count})")
        return self


class StartLag(EvidenceModel):
    """How late the generator itself started its requests so far (real seconds)."""

    starts: int
    p50_s: float
    p99_s: float
    max_s: float


class Ledger(EvidenceModel):
    """The load generator writes it by parts (arenac/loadgen/ledger.py: its seconds are encoded once,
    when settled); this is the whole document's shape."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"start_lag"})

    # the LoadProfile as the generator ran it (model/library.py), kept as written, as JSON: the
    # verifier does not read it, and a run keeps grading when the profile's format grows
    profile: dict[str, JsonValue] = Field(default_factory=dict)
    time_scale: float
    client_timeout_s: float
    phases: tuple[LedgerPhase, ...]
    seconds: tuple[LedgerSecond, ...]
    start_lag: StartLag | None = None  # absent in runs from before the generator measured it


# ---- backlog.json -------------------------------------------------------------------------------
class Backlog(EvidenceModel):
    # queue -> [[t, length], ...]; the length as the substrate counted it (an int when the runner wrote it)
    queues: dict[str, tuple[tuple[float, float | int], ...]]


# ---- runs.json ----------------------------------------------------------------------------------
class FailedRun(EvidenceModel):
    """A run of a periodic job that ended in an error, as its service listed it."""

    t: float  # when it started, in plan seconds
    error: str


class JobRuns(EvidenceModel):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"failed"})

    # job -> [[t, completed], ...]: the runs its service counted as completed since it (re)started
    jobs: dict[str, tuple[tuple[float, int], ...]]
    # job -> its runs that failed, in order of start (absent: none failed, or an older run's evidence)
    failed: dict[str, tuple[FailedRun, ...]] = Field(default_factory=dict)


# ---- challenges.json ---------------------------------------------------------------------------
class ChallengeRestart(EvidenceModel):
    service: str
    t: float
    ok: bool


class ChallengeRetrigger(EvidenceModel):
    """One retrigger of a fault. `not_fired`: why nothing was fired (the healthy control injects no
    fault, so there is none to fire again; its re-check window is still observed); absent when the
    retrigger was carried out (`ok`) or attempted and failed (not `ok`)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"not_fired"})

    fault: str
    t: float
    ok: bool
    not_fired: str | None = None


class RecordedWindow(EvidenceModel):
    start_s: float
    end_s: float


class ChallengeRecord(EvidenceModel):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"after_restart", "after_retrigger"})

    restart: tuple[ChallengeRestart, ...] = ()
    retrigger: tuple[ChallengeRetrigger, ...] = ()
    after_restart: RecordedWindow | None = None
    # the traffic window re-checked after the retriggers, when the runner retriggers after the
    # soak; without it the verifier uses the soak after the last one
    after_retrigger: RecordedWindow | None = None


# ---- harness_changes.json -----------------------------------------------------------------------
class HarnessChange(EvidenceModel):
    """One harness action after the agent started: when, what, the targets it may change, and the
    label of the snapshot taken right after it (`after_harness_N`: what the harness left those
    targets at; absent when it could not be taken, and in older runs)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"snapshot"})

    t: float
    what: str
    targets: tuple[str, ...]
    snapshot: str | None = None


class HarnessChanges(EvidenceModel):
    changes: tuple[HarnessChange, ...]


# ---- snapshots/<label>.json ---------------------------------------------------------------------
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

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"t", "read_until", "configmaps", "grants",
                                                               "agent_restarts"})

    # The substrate's own values (a config key, a datastore setting, a role's attribute, a Redis key)
    # are JSON as the runner read them: text, but a role's flags and limit, and whatever an older
    # runner wrote. The verifier compares them for equality and shows them as written.
    t: float | None = None
    # plan seconds when its reads ended (absent in older runs): on a busy machine a snapshot takes
    # seconds of plan time, and what the load did meanwhile (a deletion) may be in what it read
    read_until: float | None = None
    config: dict[str, dict[str, JsonValue]]
    # workload -> what its ConfigMap holds (format 2)
    configmaps: dict[str, dict[str, str]] = Field(default_factory=dict)
    events: dict[str, tuple[str, ...]]
    release: dict[str, str]
    db_settings: dict[str, JsonValue]
    app_role: str = "spine_app"
    roles: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)  # role -> attribute -> value
    memberships: dict[str, str] = Field(default_factory=dict)  # "MEMBER.ROLE" -> options
    privileges: dict[str, dict[str, tuple[str, ...]]] = Field(default_factory=dict)  # grantee -> object -> privileges
    grants: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # format 1 only
    redis: dict[str, JsonValue]
    tables: dict[str, TableState]
    sequences: dict[str, SequenceState]
    # workload -> pods the agent replaced so far (every workload, 0 included), once its doors are
    # open; absent before, and in older runs
    agent_restarts: dict[str, int] | None = None


# ---- boundary.json ------------------------------------------------------------------------------
class Boundary(EvidenceModel):
    """The agent's end: its declaration, its freeze, how it was confined. Not read by a gate (a
    freeze that leaves a process running ends the trial as infra_error before grading)."""

    agent: str
    declared: bool
    declared_s: float
    frozen_s: float
    processes_stopped: int
    processes_remaining: tuple[int, ...]  # always empty in a graded run
    method: str  # pid-namespace | killpg
    sandbox: str  # bwrap | none
    sandbox_reason: str | None  # why there is none
    agent_exit_code: int | None


# ---- parts.json ---------------------------------------------------------------------------------
class PartLossRecord(EvidenceModel):
    part: str  # e.g. "postgres", "message", "loadgen"
    kind: Literal["substrate", "harness"]
    t: float  # plan seconds, when it was seen
    how: str  # "exited with code 1", "killed by SIGKILL", "stopped (SIGSTOP) for 2 s"


class Parts(EvidenceModel):
    losses: tuple[PartLossRecord, ...]


# ---- acks.jsonl, harness_acks.jsonl, acked_soak_end.json ----------------------------------------
class AckedWrite(EvidenceModel):
    """One line of acks.jsonl or harness_acks.jsonl: a write the substrate said it accepted, or
    (`op` "delete") a deletion of one of the client's own writes that it asked for."""

    op: Literal["insert", "delete"] = "insert"  # absent from a write's line
    t: float  # plan time the answer arrived (a deletion without one: when the client gave up)
    source: Literal["load", "harness"]
    table: str
    id: int
    channel: str
    seq: int
    author: str
    digest: str  # loadgen/acks.py write_digest of what was sent ("" for a deleted id the client did not mean)
    requested: float | None = None  # a deletion's: plan time its request was sent
    answered: bool | None = None  # a deletion's: the answer said it was done (False: no answer came)

    @model_validator(mode="after")
    def _fields_of_its_op(self) -> AckedWrite:
        deletion = self.op == "delete"
        if deletion != (self.requested is not None) or deletion != (self.answered is not None):
            raise ValueError("`requested` and `answered` belong to a deletion's line, and it needs both")
        if not deletion and not self.digest:
            raise ValueError("a write's line needs its digest")
        return self


class PartUnreadable(EvidenceModel):
    """A part of the soak-end record the substrate refused to give: the checks needing it fail."""

    error: str


class MessagesAtSoakEnd(EvidenceModel):
    after_id: int  # the largest id at the baseline snapshot
    rows: dict[str, str]  # id (as text) -> digest of (channel name, author, body), every row above after_id


class Inbox(EvidenceModel):
    ids: tuple[int, ...]
    floor: int | None  # the lowest seq kept when the inbox holds inbox_cap entries or more, else null


class FanoutAtSoakEnd(EvidenceModel):
    queue: str
    pending: tuple[int, ...]  # message ids parked in fanout_pending
    queued: tuple[int, ...]  # ids of the events in the Redis queue
    members: dict[str, tuple[str, ...]]  # channel -> users
    inbox_cap: int
    inboxes: dict[str, dict[str, Inbox]]  # channel -> user -> inbox


class AckedSoakEnd(EvidenceModel):
    """acked_soak_end.json: what became of the acknowledged writes, recorded at soak end (and, in
    the same shape, acked_after_restart.json: at the end of the restart challenge's re-check). The
    runner records both parts; a part absent is its omission, which makes only the checks needing it
    unreadable evidence (arenac/verify/acked.py)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"messages", "fanout"})

    t: float
    messages: MessagesAtSoakEnd | PartUnreadable | None = None
    fanout: FanoutAtSoakEnd | PartUnreadable | None = None


# ---- gates.json (the bundle's verifier/gates.json, copied) ---------------------------------------
class OracleRepair(EvidenceModel):
    """One fault the oracle repairs, in the safety gate's vocabulary: `targets`, what its repair
    changes (`touched_targets` of the fault template's repair actions and what the template declares
    it touches beyond them: the compiler's `ConcreteFault.touches`), and `injected`, what its
    injection changes (`injected_targets`: `touched_targets` of its inject actions, the config keys
    and releases its chart values set, and the state its other chart values declare they become)."""

    fault: str
    layer: str
    targets: tuple[Target, ...]
    injected: tuple[Target, ...]


class GatesFile(EvidenceModel):
    """verifier/gates.json of a bundle (and its copy in the evidence)."""

    task: str | None = None
    variant: str | None = None
    baseline: str | None = None
    gates: Gates
    challenges: Challenges | None = None
    # the faults the oracle repairs, in its order (the failure taxonomy reads them, the verifier
    # does not); None: a bundle compiled before they were recorded
    repairs: tuple[OracleRepair, ...] | None = None
