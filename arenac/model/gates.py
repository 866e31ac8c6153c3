"""Gates as data: the predicates the verifier evaluates over an evidence bundle.

Numbers here are normalised (seconds, fractions, requests per second); `text` keeps a
canonical spelling of the predicate for humans reading verdicts.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from arenac.model.actions import Target
from arenac.model.base import Model
from arenac.model.guards import GuardCondition


class Metric(Model):
    """A client-side SLI from the load generator's ledger, or a substrate observable."""

    kind: Literal["metric"] = "metric"
    name: Literal["error_rate", "goodput", "throughput", "p50", "p90", "p95", "p99", "p999", "backlog", "violations"]
    route: str | None = None
    phase: str | None = None
    queue: str | None = None
    sequence: str | None = None
    baseline: bool = False  # read from the healthy baseline instead of the trial


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


class ChangesOnly(Model):
    kind: Literal["changes_only"] = "changes_only"
    targets: tuple[Target, ...]


class Guard(Model):
    kind: Literal["guard"] = "guard"
    text: str
    target: Target
    op: Literal["<=", ">=", "==", "!=", "<", ">"]
    value: float | str


class GuardExpr(Model):
    """A guard richer than one target against a bound: sums of keys, key against key, `and`/`or`,
    `absent(...)` (model/guards.py). The one-comparison form stays `Guard`, serialised as before."""

    kind: Literal["guard_expr"] = "guard_expr"
    text: str
    condition: GuardCondition


class Protect(Model):
    kind: Literal["protect"] = "protect"
    targets: tuple[Target, ...]


class ProtectQueue(Model):
    """`protect queue(fanout)`: every accepted event of an acknowledged write is still queued or
    was delivered at soak end (none was dropped)."""

    kind: Literal["protect_queue"] = "protect_queue"
    queues: tuple[str, ...]


class Invariant(Model):
    kind: Literal["invariant"] = "invariant"
    sequence: str  # table.column
    properties: tuple[Literal["dense", "unique"], ...]


SafetyCheck = Annotated[
    SurvivesRestart | SurvivesRetrigger | ChangesOnly | Guard | GuardExpr | Protect | ProtectQueue | Invariant,
    Field(discriminator="kind"),
]


class Gates(Model):
    outcome: tuple[Predicate, ...]
    safety: tuple[SafetyCheck, ...]
