"""The syntax tree of a .arena file.

One small frozen dataclass per construct, each with the `Span` it came from, so that
later phases can point at the author's text. The tree says what was written, not
what it means: names are unresolved and alternatives are unexpanded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from arenac.core.source import Span
from arenac.core.units import Quantity


@dataclass(frozen=True)
class Name:
    text: str
    span: Span


@dataclass(frozen=True)
class StringLit:
    value: str
    span: Span


@dataclass(frozen=True)
class NumberLit:
    value: float
    span: Span


@dataclass(frozen=True)
class QuantityLit:
    quantity: Quantity
    span: Span


@dataclass(frozen=True)
class Ref:
    """A dotted name such as `spine.standard` or `message.DB_POOL_SIZE`."""

    parts: tuple[str, ...]
    span: Span

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class Arg:
    name: Name | None
    alternatives: tuple[Value, ...]
    span: Span


@dataclass(frozen=True)
class Call:
    func: Ref
    args: tuple[Arg, ...]
    span: Span


@dataclass(frozen=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    span: Span


Value: TypeAlias = StringLit | NumberLit | QuantityLit | Ref | Call
Expr: TypeAlias = NumberLit | QuantityLit | Ref | Call | Binary


@dataclass(frozen=True)
class Comparison:
    left: Expr
    op: str
    right: Expr
    span: Span


# ---- statements ----------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    path: Ref
    span: Span


@dataclass(frozen=True)
class Setting:
    key: Name
    alternatives: tuple[Value, ...]
    span: Span


@dataclass(frozen=True)
class Onset:
    kind: str  # at_start | after | in_window | every | when
    span: Span
    after: QuantityLit | None = None
    every: QuantityLit | None = None
    offset: QuantityLit | None = None
    duration: QuantityLit | None = None
    when: Comparison | None = None


@dataclass(frozen=True)
class Recur:
    delay: QuantityLit | None
    span: Span


@dataclass(frozen=True)
class FaultDecl:
    name: Name
    call: Call
    settings: tuple[Setting, ...]
    onset: Onset | None
    recur: Recur | None
    span: Span
    decoy: bool = False  # `decoy NAME = ...`: injected, never the cause, never repaired by the oracle


@dataclass(frozen=True)
class ResourceRef:
    resource: Name
    subresource: Name | None
    api_group: str | None
    names: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class KubeRule:
    verbs: tuple[Name, ...]
    resources: tuple[ResourceRef, ...]
    span: Span


@dataclass(frozen=True)
class ExecRule:
    workloads: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class AdminRule:
    service: Name
    paths: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class DbRule:
    role: Name
    span: Span


@dataclass(frozen=True)
class SourceRule:
    paths: tuple[StringLit, ...]
    span: Span


@dataclass(frozen=True)
class AllowRule:
    grants: tuple[Name, ...]
    span: Span


AccessRule: TypeAlias = KubeRule | ExecRule | AdminRule | DbRule | SourceRule | AllowRule | Use


@dataclass(frozen=True)
class AccessDef:
    name: Name
    rules: tuple[AccessRule, ...]
    span: Span


@dataclass(frozen=True)
class AccessChoice:
    alternatives: tuple[Value, ...]
    span: Span


@dataclass(frozen=True)
class PhaseDecl:
    name: Name
    duration: QuantityLit
    rate: QuantityLit
    span: Span


@dataclass(frozen=True)
class MixEntry:
    route: Name
    weight: NumberLit
    span: Span


@dataclass(frozen=True)
class LoadDef:
    name: Name
    warmup: PhaseDecl | None
    phases: tuple[PhaseDecl, ...]
    mix: tuple[MixEntry, ...]
    span: Span


@dataclass(frozen=True)
class Predicate:
    comparison: Comparison
    window_kind: str | None  # within | for
    window: QuantityLit | None
    span: Span


@dataclass(frozen=True)
class Survives:
    call: Call
    span: Span


@dataclass(frozen=True)
class Never:
    call: Call
    span: Span


@dataclass(frozen=True)
class FaultRemoved:
    call: Call
    span: Span


@dataclass(frozen=True)
class ChangesOnly:
    targets: tuple[Call, ...]
    span: Span


@dataclass(frozen=True)
class Absent:
    """`absent(config(m.K))` in a guard: holds when the snapshot has no value for the target (a
    bare name is a macro parameter standing for one)."""

    target: Call | Ref
    span: Span


@dataclass(frozen=True)
class GuardBool:
    """Comparisons joined by `and` or `or` (one operator per node: `a and b and c` is one node)."""

    op: str  # and | or
    parts: tuple[GuardCondition, ...]
    span: Span


GuardCondition: TypeAlias = Comparison | Absent | GuardBool


@dataclass(frozen=True)
class Guard:
    condition: GuardCondition
    span: Span
    at: tuple[Name, ...] = ()  # the snapshots it holds at; () for the default ones


@dataclass(frozen=True)
class Protect:
    targets: tuple[Call, ...]
    span: Span
    at: tuple[Name, ...] = ()  # the records a queue's protection is judged at; () for soak_end


@dataclass(frozen=True)
class Invariant:
    call: Call
    properties: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class MacroUse:
    call: Call
    span: Span


GateStmt: TypeAlias = Predicate | Survives | ChangesOnly | Guard | Protect | Invariant | MacroUse


@dataclass(frozen=True)
class GateDecl:
    name: Name
    statements: tuple[GateStmt, ...]
    span: Span
    short: bool = False  # written `gate NAME = MACRO(args)`: one MacroUse, spanning the call


@dataclass(frozen=True)
class MacroDef:
    name: Name
    params: tuple[Name, ...]
    statements: tuple[GateStmt, ...]
    span: Span


@dataclass(frozen=True)
class OracleStep:
    kind: str  # repair | wait_until | wait_for | declare
    span: Span
    target: Name | None = None
    duration: QuantityLit | None = None


@dataclass(frozen=True)
class OracleDecl:
    steps: tuple[OracleStep, ...]
    span: Span


@dataclass(frozen=True)
class HealthySetting:
    """`config(redis.appendonly) = "yes"` in a `healthy { }` block: a value of the substrate's
    configuration in every variant and the healthy control alike."""

    target: Call
    value: Value
    span: Span


@dataclass(frozen=True)
class HealthyDecl:
    settings: tuple[HealthySetting, ...]
    span: Span


TaskStmt: TypeAlias = Setting | FaultDecl | AccessChoice | AccessDef | GateDecl | OracleDecl | HealthyDecl | Use


@dataclass(frozen=True)
class TaskDecl:
    name: Name
    statements: tuple[TaskStmt, ...]
    span: Span


@dataclass(frozen=True)
class Module:
    """One parsed file."""

    file: str
    uses: tuple[Use, ...] = ()
    tasks: tuple[TaskDecl, ...] = ()
    access_defs: tuple[AccessDef, ...] = ()
    loads: tuple[LoadDef, ...] = ()
    macros: tuple[MacroDef, ...] = ()
    items: tuple[object, ...] = field(default=(), repr=False)
