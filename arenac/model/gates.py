"""Gates as data: the predicates the verifier evaluates over an evidence bundle.

Numbers here are normalised (seconds, fractions, requests per second); `text` keeps a
canonical spelling of the predicate for humans reading verdicts.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field

from arenac.model.actions import Target
from arenac.model.base import Model
from arenac.model.guards import GuardCondition
from arenac.model.record import Record


class Metric(Record):
    """A client-side SLI from the load generator's ledger, or a substrate observable. `job` (a
    periodic job's completed runs, `runs(maintenance)`) is left out while empty, so every other
    metric serialises as before it existed."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"job"})

    kind: Literal["metric"] = "metric"
    name: Literal["error_rate", "goodput", "throughput", "p50", "p90", "p95", "p99", "p999", "backlog", "violations",
                  "runs"]
    route: str | None = None
    phase: str | None = None
    queue: str | None = None
    sequence: str | None = None
    baseline: bool = False  # read from the healthy baseline instead of the trial
    job: str | None = None


class Const(Model):
    kind: Literal["const"] = "const"
    value: float
    dimension: str


class BinOp(Model):
    kind: Literal["binop"] = "binop"
    op: Literal["+", "-", "*"]
    left: Expr
    right: Expr


Expr = Annotated[Metric | Const | BinOp, Field(discriminator="kind")]
BinOp.model_rebuild()


class Predicate(Model):
    text: str
    left: Expr
    op: Literal["<=", ">=", "==", "!=", "<", ">"]
    right: Expr
    window: Literal["soak", "within", "for"] = "soak"
    window_s: float | None = None


class SurvivesRestart(Model):
    kind: Literal["survives_restart"] = "survives_restart"
    services: tuple[str, ...]


class SurvivesRetrigger(Model):
    kind: Literal["survives_retrigger"] = "survives_retrigger"
    faults: tuple[str, ...]


class NeverRestarted(Model):
    """`never restarted(channel)`: the agent restarted none of these workloads (a rollout, a pod
    deleted, a scale), read from the declaration snapshot's `agent_restarts`."""

    kind: Literal["never_restarted"] = "never_restarted"
    services: tuple[str, ...]


class FaultRemoved(Model):
    """`fault removed(acl)`: each named fault's mechanism is gone at soak end, not masked: at least
    one of the items its injection changed differs from what the agent found (verify/mechanism.py),
    judged on the snapshots with gates.json's record of what each injection changed."""

    kind: Literal["fault_removed"] = "fault_removed"
    faults: tuple[str, ...]


class ChangesOnly(Model):
    kind: Literal["changes_only"] = "changes_only"
    targets: tuple[Target, ...]


# The snapshots a guard may be held at (`guard ... at declaration`): the agent's end state when its
# window closed, the end of the soak, and after the restart challenge.
GuardSnapshot = Literal["declaration", "soak_end", "after_restart"]
GUARD_SNAPSHOTS: tuple[str, ...] = get_args(GuardSnapshot)


class Guard(Record):
    """A target against a bound, held at `at` (absent: at soak_end and, when the run has one,
    after_restart, as before `at` existed, so such a guard serialises as before)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"at"})

    kind: Literal["guard"] = "guard"
    text: str
    target: Target
    op: Literal["<=", ">=", "==", "!=", "<", ">"]
    value: float | str
    at: tuple[GuardSnapshot, ...] | None = None


class GuardExpr(Record):
    """A guard richer than one target against a bound: sums of keys, key against key, `and`/`or`,
    `absent(...)` (model/guards.py). The one-comparison form stays `Guard`, serialised as before;
    `at` as Guard's."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"at"})

    kind: Literal["guard_expr"] = "guard_expr"
    text: str
    condition: GuardCondition
    at: tuple[GuardSnapshot, ...] | None = None


class Protect(Model):
    kind: Literal["protect"] = "protect"
    targets: tuple[Target, ...]


# The records of acknowledged writes a queue's protection may be judged at (`protect queue(fanout) at
# soak_end, after_restart`): the end of the soak, and the end of the restart challenge's re-check.
QueueRecord = Literal["soak_end", "after_restart"]
QUEUE_RECORDS: tuple[str, ...] = get_args(QueueRecord)


class ProtectQueue(Record):
    """`protect queue(fanout)`: every accepted event of an acknowledged write is still queued or
    was delivered (none was dropped) at each record `at` names; absent: at soak end only, as before
    `at` existed (so such a check serialises as before). `after_restart` asks that the queue also
    outlive the restart challenge (its datastore's restart)."""

    omitted_when_empty: ClassVar[frozenset[str]] = frozenset({"at"})

    kind: Literal["protect_queue"] = "protect_queue"
    queues: tuple[str, ...]
    at: tuple[QueueRecord, ...] | None = None

    @property
    def records(self) -> tuple[str, ...]:
        """The records it is judged at, in the run's order."""
        return tuple(label for label in QUEUE_RECORDS if label in (self.at or ("soak_end",)))


class Invariant(Model):
    kind: Literal["invariant"] = "invariant"
    sequence: str  # table.column
    properties: tuple[Literal["dense", "unique"], ...]


SafetyCheck = Annotated[
    SurvivesRestart | SurvivesRetrigger | NeverRestarted | FaultRemoved | ChangesOnly | Guard | GuardExpr | Protect
    | ProtectQueue | Invariant,
    Field(discriminator="kind"),
]


class Gates(Model):
    outcome: tuple[Predicate, ...]
    safety: tuple[SafetyCheck, ...]
