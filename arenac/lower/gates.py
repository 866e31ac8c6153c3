"""Lower the outcome and safety gates, expanding gate macros.

The outcome gate holds measured predicates; the safety gate holds survives / changes
only / guard / protect / invariant checks. Targets (`config(message.DB_POOL_SIZE)`,
`table(messages)`, ...) are resolved against the substrate descriptor by lower/targets.py.
`protect queue(q)` names a queue of the descriptor and lowers to its own check (`ProtectQueue`);
a `protect` line that names queues and other targets lowers to a `Protect` and a `ProtectQueue`.
`protect queue(q) at soak_end, after_restart` names the records it is judged at (E0213 for another
label, or for `at` on a line that protects more than queues); `after_restart` needs a `survives
restart` of the datastore that holds each queue (E0529), since only that restart can lose it.
"""

from __future__ import annotations

import re

from arenac.core.diagnostics import did_you_mean
from arenac.core.units import Dimension, format_quantity
from arenac.lower.config_keys import KeyType
from arenac.lower.exprs import ExprContext, dimension_words, lower_predicate
from arenac.lower.guard_exprs import GuardExprLowering
from arenac.lower.guard_keys import GUARD_KINDS, event_state_ok, observed_key_type, role_attribute_ok
from arenac.lower.source_map import SourceMap
from arenac.lower.targets import one_target, targets
from arenac.model.actions import Target
from arenac.model.gates import (
    GUARD_SNAPSHOTS,
    QUEUE_RECORDS,
    ChangesOnly,
    FaultRemoved,
    Gates,
    Guard,
    GuardExpr,
    Invariant,
    NeverRestarted,
    Predicate,
    Protect,
    ProtectQueue,
    SafetyCheck,
    SurvivesRestart,
    SurvivesRetrigger,
)
from arenac.syntax import ast
from arenac.syntax.unparse import value_text

GATE_NAMES = ("outcome", "safety")
PROTECT_KINDS = ("table", "sequence", "config", "release", "queue")  # queue(...): a ProtectQueue check
_MAX_MACRO_DEPTH = 8


class GateLowering:
    def __init__(self, ctx: ExprContext, macros: dict[str, ast.MacroDef], fault_names: tuple[str, ...],
                 spans: SourceMap):
        self.spans = spans
        self.ctx = ctx
        self.macros = macros
        self.fault_names = fault_names
        self._after_restart: list[ast.Name] = []  # `at after_restart` labels: a restart challenge must exist
        # `protect queue(...) at after_restart`: (its label, the queues) whose datastores a restart must include
        self._queues_after_restart: list[tuple[ast.Name, tuple[str, ...]]] = []

    @property
    def errors(self):
        return self.ctx.collector

    def lower(self, gates: list[ast.GateDecl], task_span) -> Gates | None:
        outcome: list[Predicate] = []
        safety: list[SafetyCheck] = []
        seen: dict[str, ast.GateDecl] = {}
        for gate in gates:
            name = gate.name.text
            if name not in GATE_NAMES:
                self.errors.error("E0207", f"unknown gate '{name}'", gate.name.span,
                                  did_you_mean(name, GATE_NAMES) or "gates are 'outcome' and 'safety'")
                continue
            if name in seen:
                self.errors.error("E0208", f"gate '{name}' is declared twice", gate.name.span)
                continue
            seen[name] = gate
            for stmt in gate.statements:
                self._statement(name, stmt, outcome, safety, depth=0)
        for name in GATE_NAMES:
            if name not in seen:
                self.errors.error("E0209", f"the task has no {name} gate", task_span,
                                  f"add `gate {name} {{ ... }}`")
        if not any(isinstance(check, SurvivesRestart) for check in safety):
            for label in self._after_restart:
                self.errors.error("E0523", "a guard held `at after_restart` in a task without a restart challenge: "
                                  "no run has that snapshot", label.span,
                                  "add `survives restart(...)` to the safety gate, or hold the guard at soak_end")
        self._check_queue_restarts(safety)
        return Gates(outcome=tuple(outcome), safety=tuple(safety))

    def _check_queue_restarts(self, safety: list[SafetyCheck]) -> None:
        """E0529: `protect queue(Q) at after_restart` where no `survives restart` restarts the
        datastore that holds Q. Without a restart there is no record to judge; with a restart of
        other services only, the queue was never at risk, and a pass would prove nothing."""
        restarted = [s for check in safety if isinstance(check, SurvivesRestart) for s in check.services]
        holders = {q.name: q.datastore for q in self.ctx.substrate.queues}
        for label, queues in self._queues_after_restart:
            missing = list(dict.fromkeys(d for q in queues if (d := holders.get(q)) and d not in restarted))
            if not missing:
                continue
            shown = ", ".join(f"queue({q}) lives in {holders[q]}" for q in queues if holders.get(q) in missing)
            if not restarted:
                self.errors.error("E0529", f"a queue protected `at after_restart` in a task without a restart "
                                  f"challenge: no run restarts {' or '.join(missing)} ({shown})", label.span,
                                  f"add `survives restart({', '.join(missing)})` to the safety gate, "
                                  "or judge the queue at soak_end only")
                continue
            services = list(dict.fromkeys(restarted))
            written = f"survives restart({', '.join(services)})"
            self.errors.error("E0529", f"a queue protected `at after_restart`, but `{written}` "
                              f"does not restart {' or '.join(missing)} ({shown}): the check would judge a restart "
                              "that never put the queue at risk", label.span,
                              f"restart the datastore too: `survives restart({', '.join(services + missing)})`")

    def _statement(self, gate: str, stmt, outcome: list, safety: list, depth: int) -> None:
        if isinstance(stmt, ast.MacroUse):
            self._expand(gate, stmt, outcome, safety, depth)
            return
        if isinstance(stmt, ast.Predicate):
            if gate != "outcome":
                self.errors.error("E0503", "measured predicates belong in the outcome gate", stmt.span)
                return
            predicate = lower_predicate(stmt, self.ctx)
            if predicate is not None:
                outcome.append(predicate)
            return
        if gate != "safety":
            self.errors.error("E0503", "safety checks belong in the safety gate", stmt.span)
            return
        checks = self._protect(stmt) if isinstance(stmt, ast.Protect) else [self._safety(stmt)]
        for check in checks:
            if check is not None:
                self.spans.safety[len(safety)] = stmt.span
                safety.append(check)

    def _expand(self, gate: str, use: ast.MacroUse, outcome: list, safety: list, depth: int) -> None:
        name = use.call.func.text
        macro = self.macros.get(name)
        if macro is None:
            self.errors.error("E0210", f"unknown gate macro '{name}'", use.call.func.span,
                              did_you_mean(name, self.macros))
            return
        if depth >= _MAX_MACRO_DEPTH:
            self.errors.error("E0211", f"gate macro '{name}' expands into itself", use.span)
            return
        params = [p.text for p in macro.params]
        bindings: dict[str, ast.Value] = {}
        for position, arg in enumerate(use.call.args):
            key = arg.name.text if arg.name else (params[position] if position < len(params) else None)
            if key is None or key not in params:
                self.errors.error("E0205", f"macro '{name}' has no parameter '{key or position + 1}'", arg.span,
                                  did_you_mean(key or "", params))
                return
            bindings[key] = self.ctx.bind(arg.alternatives[0])
        missing = [p for p in params if p not in bindings]
        if missing:
            self.errors.error("E0206", f"macro '{name}' needs {', '.join(missing)}", use.span)
            return
        outer = self.ctx.bindings
        self.ctx.bindings = bindings
        try:
            for stmt in macro.statements:
                self._statement(gate, stmt, outcome, safety, depth + 1)
        finally:
            self.ctx.bindings = outer

    # ---- safety ------------------------------------------------------------------
    def _safety(self, stmt) -> SafetyCheck | None:
        if isinstance(stmt, ast.Survives):
            return self._survives(stmt)
        if isinstance(stmt, ast.Never):
            return self._never(stmt)
        if isinstance(stmt, ast.FaultRemoved):
            return self._fault_removed(stmt)
        if isinstance(stmt, ast.ChangesOnly):
            groups = [targets(call, self.ctx) for call in stmt.targets]  # every call, each reporting its errors
            found = [g for g in groups if g is not None]
            return ChangesOnly(targets=tuple(t for g in found for t in g)) if len(found) == len(groups) else None
        if isinstance(stmt, ast.Guard):
            return self._guard(stmt)
        if isinstance(stmt, ast.Invariant):
            return self._invariant(stmt)
        return None  # pragma: no cover (the grammar admits nothing else)

    def _protect(self, stmt: ast.Protect) -> list[SafetyCheck]:
        """`protect table(messages), queue(fanout)`: the data targets and the queues, each a check."""
        data = [call for call in stmt.targets if call.func.text != "queue"]
        queues = [call for call in stmt.targets if call.func.text == "queue"]
        found = [targets(call, self.ctx, kinds=PROTECT_KINDS) for call in data]
        queued = [self._queues(call) for call in queues]
        groups = [g for g in found if g is not None]
        names = [n for n in queued if n is not None]
        if len(groups) < len(found) or len(names) < len(queued):
            return []
        at = self._queue_records(stmt, bool(data))
        if at is None:
            return []
        checks: list[SafetyCheck] = []
        if data:
            checks.append(Protect(targets=tuple(t for g in groups for t in g)))
        if queues:
            protected = tuple(dict.fromkeys(q for n in names for q in n))
            checks.append(ProtectQueue(queues=protected, at=at or None))
            self._queues_after_restart += [(label, protected) for label in stmt.at if label.text == "after_restart"]
        return checks

    def _queue_records(self, stmt: ast.Protect, has_data: bool) -> tuple[str, ...] | None:
        """The records `at` names, in the order written, each once (() without `at`); None after
        E0213 for a label that is not a queue record, or for `at` on a line that protects tables,
        sequences, config or releases (judged at soak end only: they are compared with the baseline
        snapshot, which a restart challenge's losses are never blamed on)."""
        if stmt.at and has_data:
            self.errors.error("E0213", "only a queue's protection is judged `at` a record: this line protects "
                              "tables, sequences, config or releases too, which are judged at soak_end",
                              stmt.at[0].span, "protect the queue on a line of its own: `protect queue(...) at ...`")
            return None
        labels = self._labels(stmt.at, QUEUE_RECORDS, "a queue's protection cannot be judged at",
                              "the records of acknowledged writes are")
        return tuple(labels) if labels is not None else None

    def _labels(self, written: tuple[ast.Name, ...], known: tuple[str, ...], refused: str,
                listed: str) -> list[str] | None:
        """The `at` labels as written, each once; None after E0213 for one not in KNOWN (`REFUSED
        'x'`, with the near label or `LISTED a, b` as the hint)."""
        labels: list[str] = []
        for label in written:
            if label.text not in known:
                self.errors.error("E0213", f"{refused} '{label.text}'", label.span,
                                  did_you_mean(label.text, known) or f"{listed} {', '.join(known)}")
                return None
            if label.text not in labels:
                labels.append(label.text)
        return labels

    def _queues(self, call: ast.Call) -> list[str] | None:
        known = [q.name for q in self.ctx.substrate.queues]
        found = []
        for arg in call.args:
            ref = self.ctx.bind(arg.alternatives[0])
            if arg.name is not None or len(arg.alternatives) != 1 or not isinstance(ref, ast.Ref):
                self.errors.error("E0305", "queue(...) takes queue names such as fanout", arg.span)
                return None
            if ref.text not in known:
                self.errors.error("E0203", f"unknown queue '{ref.text}'", ref.span, did_you_mean(ref.text, known))
                return None
            found.append(ref.text)
        if not found:
            self.errors.error("E0206", "queue(...) needs a name", call.span)
            return None
        return found

    def _survives(self, stmt: ast.Survives) -> SafetyCheck | None:
        kind = stmt.call.func.text
        names = self._names(stmt.call, f"survives {kind}", stmt.span)
        if names is None:
            return None
        if kind == "restart":
            services = self._services(names)
            return SurvivesRestart(services=services) if services is not None else None
        if kind == "retrigger":
            faults = self._faults(names)
            return SurvivesRetrigger(faults=faults) if faults is not None else None
        self.errors.error("E0204", f"unknown challenge '{kind}'", stmt.call.func.span,
                          did_you_mean(kind, ("restart", "retrigger")) or "use restart(...) or retrigger(...)")
        return None

    def _never(self, stmt: ast.Never) -> NeverRestarted | None:
        kind = stmt.call.func.text
        if kind != "restarted":
            self.errors.error("E0204", f"unknown check 'never {kind}'", stmt.call.func.span,
                              did_you_mean(kind, ("restarted",)) or "use never restarted(SERVICE, ...)")
            return None
        names = self._names(stmt.call, "never restarted", stmt.span)
        services = self._services(names) if names is not None else None
        return NeverRestarted(services=services) if services is not None else None

    def _fault_removed(self, stmt: ast.FaultRemoved) -> FaultRemoved | None:
        """`fault removed(F, ...)`: F names faults of the task (whether the oracle repairs each, and
        whether its injection leaves state to judge, depends on the variant: validate.py, E0531)."""
        kind = stmt.call.func.text
        if kind != "removed":
            self.errors.error("E0204", f"unknown check 'fault {kind}'", stmt.call.func.span,
                              did_you_mean(kind, ("removed",)) or "use fault removed(FAULT, ...)")
            return None
        names = self._names(stmt.call, "fault removed", stmt.span)
        faults = self._faults(names) if names is not None else None
        return FaultRemoved(faults=tuple(dict.fromkeys(faults))) if faults is not None else None

    def _faults(self, names: list[ast.Ref]) -> tuple[str, ...] | None:
        """The faults of the task `names` name; None after E0203 for one it does not declare."""
        for ref in names:
            if ref.text not in self.fault_names:
                self.errors.error("E0203", f"unknown fault '{ref.text}'", ref.span,
                                  did_you_mean(ref.text, self.fault_names))
                return None
        return tuple(r.text for r in names)

    def _names(self, call: ast.Call, spelled: str, span) -> list[ast.Ref] | None:
        """The call's arguments, each a name (E0305), at least one (E0206); None after reporting."""
        names = []
        for arg in call.args:
            value = self.ctx.bind(arg.alternatives[0])  # in a macro, a parameter stands for its argument
            if not isinstance(value, ast.Ref):
                self.errors.error("E0305", f"{spelled}(...) takes names", arg.span)
                return None
            names.append(value)
        if not names:
            self.errors.error("E0206", f"{spelled}(...) needs at least one name", span)
            return None
        return names

    def _services(self, names: list[ast.Ref]) -> tuple[str, ...] | None:
        """The services (datastores included) `names` name, each restartable; None after reporting."""
        services = {s.name: s for s in self.ctx.substrate.services}
        for ref in names:
            service = services.get(ref.text)
            if service is None:
                self.errors.error("E0203", f"unknown service '{ref.text}'", ref.span, did_you_mean(ref.text, services))
                return None
            if not service.restartable:
                self.errors.error("E0504", f"service '{ref.text}' cannot be restarted", ref.span)
                return None
        return tuple(r.text for r in names)

    def _guard(self, stmt: ast.Guard) -> Guard | GuardExpr | None:
        """The guard's condition (`_condition`), held at the snapshots its `at` names (E0213 for
        one that is not a guard's; its text then ends in ` at ...`)."""
        labels = self._labels(stmt.at, GUARD_SNAPSHOTS, "a guard cannot be held at", "the snapshots a guard reads are")
        if labels is None:
            return None
        self._after_restart += [label for label in stmt.at if label.text == "after_restart"]
        check = self._condition(stmt)
        if check is None or not labels:
            return check
        return check.model_copy(update={"at": tuple(labels), "text": f"{check.text} at {', '.join(labels)}"})

    def _condition(self, stmt: ast.Guard) -> Guard | GuardExpr | None:
        """One target against a bound is a `Guard` (as before richer guards existed); any other
        condition a `GuardExpr` (lower/guard_exprs.py)."""
        comparison = stmt.condition
        if not _single_comparison(comparison, self.ctx):
            return GuardExprLowering(self.ctx).lower(comparison)
        assert isinstance(comparison, ast.Comparison)
        if not isinstance(comparison.left, ast.Call):
            self.errors.error("E0305", "a guard compares a target such as config(message.DB_POOL_SIZE) with a value",
                              comparison.span)
            return None
        target = one_target(comparison.left, self.ctx, kinds=GUARD_KINDS)
        right = self.ctx.bind(comparison.right)
        if not isinstance(right, (ast.NumberLit, ast.QuantityLit, ast.Ref)):
            self.errors.error("E0305", "a guard's bound is a number, quantity or name", right.span)
            return None
        if target is None:
            return None
        if target.kind == "event" and not event_state_ok(comparison.op, right, comparison, self.ctx):
            return None
        if target.kind == "role" and not role_attribute_ok(target, comparison.left, self.ctx):
            return None
        if target.kind == "config":
            value = self._config_bound(target, comparison, right)
        else:  # the descriptor does not type these: the bound is kept in base units
            value = right.text if isinstance(right, ast.Ref) else _literal_value(right)
        if value is None:
            return None
        text = f"{target} {comparison.op} {value_text(right)}"
        return Guard(text=text, target=target, op=comparison.op, value=value)

    def _config_bound(self, target: Target, comparison: ast.Comparison, right) -> float | str | None:
        """The bound of a guard on a config key, in the unit the key's raw value is in.

        The bound must have the key's dimension (E0301 for a quantity of another one, E0302
        for a name where a number belongs or the reverse); a plain number is read in the
        key's own unit, which its name spells (`_MS`, `_S`). None after reporting.
        """
        kind = observed_key_type(target, comparison.left, self.ctx)
        if kind is None:
            return None
        service, key = target.ref.split(".")
        described = self.ctx.substrate.service(service)
        assert described is not None  # resolve_target checked the service
        healthy = described.config[key]
        shown = f"config({target.ref})"
        if kind.dimension is None:  # a name
            if not isinstance(right, ast.Ref):
                self.errors.error("E0302", f"{shown} holds a name, not {_literal_words(right)}", right.span,
                                  _name_example(comparison.op, healthy))
                return None
            if comparison.op not in ("==", "!="):
                self.errors.error("E0302", f"{shown} holds a name: it compares only with == or !=", comparison.span,
                                  _name_example("==", healthy))
                return None
            return right.text
        example = _bound_example(comparison.op, healthy, kind)
        if isinstance(right, ast.Ref):
            self.errors.error("E0302", f"{shown} holds {dimension_words(kind.dimension)}, not a name ('{right.text}')",
                              right.span, example)
            return None
        if isinstance(right, ast.QuantityLit) and right.quantity.dimension != kind.dimension:
            self.errors.error("E0301", f"cannot compare {shown}, {dimension_words(kind.dimension)}, with "
                              f"{dimension_words(right.quantity.dimension)} ('{right.quantity.text}')", right.span,
                              example)
            return None
        if isinstance(right, ast.NumberLit):
            return right.value
        return round(right.quantity.value / kind.unit, 9)

    def _invariant(self, stmt: ast.Invariant) -> Invariant | None:
        if stmt.call.func.text != "sequence":
            self.errors.error("E0204", f"unknown invariant '{stmt.call.func.text}'", stmt.call.func.span,
                              "invariants are sequence(TABLE.COLUMN) dense unique")
            return None
        target = one_target(stmt.call, self.ctx, kinds=("sequence",), kind_override="sequence")
        props = []
        for prop in stmt.properties:
            if prop.text not in ("dense", "unique"):
                self.errors.error("E0204", f"unknown sequence property '{prop.text}'", prop.span,
                                  did_you_mean(prop.text, ("dense", "unique")))
                return None
            props.append(prop.text)
        return Invariant(sequence=target.ref, properties=tuple(props)) if target else None


def _single_comparison(condition: ast.GuardCondition, ctx: ExprContext) -> bool:
    """Whether a guard is the one form that predates richer guards: a comparison that is not a sum
    on the left and has no key on the right (whose errors, when it has them, stay those of that form)."""
    if not isinstance(condition, ast.Comparison):
        return False
    keyed = (ast.Call, ast.Binary)
    return not isinstance(condition.left, ast.Binary) and not isinstance(ctx.bind(condition.right), keyed) \
        and (isinstance(condition.left, ast.Call) or not isinstance(ctx.bind(condition.left), keyed))


def _literal_value(node: ast.NumberLit | ast.QuantityLit) -> float:
    return node.value if isinstance(node, ast.NumberLit) else node.quantity.value


def _literal_words(node: ast.NumberLit | ast.QuantityLit) -> str:
    if isinstance(node, ast.NumberLit):
        return f"a number ('{value_text(node)}')"
    return f"{dimension_words(node.quantity.dimension)} ('{node.quantity.text}')"


def _name_example(op: str, healthy: str) -> str:
    name = healthy if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", healthy) else "NAME"
    return f"compare it with == or != and a name, e.g. `{op if op in ('==', '!=') else '=='} {name}`"


def _bound_example(op: str, healthy: str, kind: KeyType) -> str:
    """A bound of the right kind, built from the key's healthy value."""
    try:
        value = float(healthy)
    except ValueError:
        value = None
    if kind.dimension == Dimension.number:
        return f"write a plain number, e.g. `{op} {healthy if value is not None else 10}`"
    if kind.dimension == Dimension.duration and value is not None:
        return f"write a duration, e.g. `{op} {format_quantity(value * kind.unit, Dimension.duration)}`"
    example = "64Mi" if kind.dimension == Dimension.size else "1s"
    assert kind.dimension is not None  # a name's example is _name_example's
    return f"write {dimension_words(kind.dimension)}, e.g. `{op} {example}`"
