"""Lower a task's oracle: its `oracle { }` block, or the default one when it has none.

Contract: `lower_oracle` returns the steps (repair a fault, wait until healthy within a duration,
wait a duration, declare) and records their spans in the task's `SourceMap`. The block names
only declared faults and never a decoy (E0203, E0511), waits positive durations (E0302, E0307)
and ends with `declare` (E0506); a second block is E0208. Without a block, the oracle repairs
every fault that is not a decoy, in declaration order, then declares.
"""

from __future__ import annotations

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.units import Dimension
from arenac.lower.exprs import require_positive
from arenac.lower.source_map import SourceMap
from arenac.model.task import OracleStep
from arenac.syntax import ast


def lower_oracle(task: ast.TaskDecl, fault_decls: list[ast.FaultDecl], faults: tuple[str, ...], decoys: set[str],
                 errors: Collector, spans: SourceMap) -> list[OracleStep]:
    """The task's oracle steps; FAULTS are the names declared, DECOYS those of them that are decoys."""
    decls = [s for s in task.statements if isinstance(s, ast.OracleDecl)]
    if not decls:
        return _default_oracle(fault_decls, spans)
    for extra in decls[1:]:
        errors.error("E0208", "the oracle is given twice", extra.span, "put every step in one `oracle { }` block")
    steps: list[OracleStep] = []
    spans.oracle = decls[0].span
    for step in decls[0].steps:
        if step.kind == "repair":
            assert step.target is not None  # the grammar: `repair FAULT`
            if step.target.text not in faults:
                errors.error("E0203", f"unknown fault '{step.target.text}'", step.target.span,
                             did_you_mean(step.target.text, faults))
            elif step.target.text in decoys:
                errors.error("E0511", f"'{step.target.text}' is a decoy: the oracle must leave it alone",
                             step.target.span, "repair the faults that cause the symptom, or declare it as a `fault`")
            spans.repairs[step.target.text] = step.span
            steps.append(OracleStep(kind="repair", target=step.target.text))
        elif step.kind == "wait_until":
            assert step.target is not None and step.duration is not None  # `wait until healthy within <d>`
            if step.duration.quantity.dimension != Dimension.duration:
                errors.error("E0302", f"the oracle waits a duration, not '{step.duration.quantity.text}'",
                             step.duration.span, "e.g. within 60s")
            else:
                require_positive(step.duration, "the wait until healthy", errors, "e.g. within 60s")
            if step.target.text != "healthy":
                errors.error("E0203", f"unknown condition '{step.target.text}'", step.target.span,
                             "the oracle can wait until healthy")
            steps.append(OracleStep(kind="wait_until", target="healthy", duration_s=step.duration.quantity.value))
        elif step.kind == "wait_for":
            assert step.duration is not None  # the grammar: `wait <d>`
            if step.duration.quantity.dimension != Dimension.duration:
                errors.error("E0302", f"the oracle waits a duration, not '{step.duration.quantity.text}'",
                             step.duration.span, "e.g. wait 10s")
            else:
                require_positive(step.duration, "a wait", errors, "e.g. wait 10s, or leave the step out")
            steps.append(OracleStep(kind="wait_for", duration_s=step.duration.quantity.value))
        else:
            steps.append(OracleStep(kind="declare"))
    if not steps or steps[-1].kind != "declare":
        errors.error("E0506", "the oracle must end with `declare`", decls[0].span)
    return steps


def _default_oracle(fault_decls: list[ast.FaultDecl], spans: SourceMap) -> list[OracleStep]:
    """No `oracle { }` block: repair every fault that is not a decoy, in declaration order, then
    declare. The static checks point at each fault's declaration for its repair."""
    steps: list[OracleStep] = []
    seen: set[str] = set()
    for decl in fault_decls:
        name = decl.name.text
        if decl.decoy or name in seen:
            continue  # a decoy is never repaired; a fault declared twice is reported already
        seen.add(name)
        spans.repairs[name] = decl.name.span
        steps.append(OracleStep(kind="repair", target=name))
    steps.append(OracleStep(kind="declare"))
    return steps
