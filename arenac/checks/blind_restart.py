"""Variants a blind restart repairs, found statically from the templates' `durable_in`.

Contract: a fault template lists the layers at which its fault outlives a restart (`durable_in`).
Injected at any other layer through a service's admin API only (a value set, an event switched on,
a pool resized in memory), the fault lives only in that running process, and a restart of the
service undoes it and loses nothing (an admin reload too, but for an event, which outlives a reload:
docs/substrate.md, "What survives what"). `blind_restart_warning(variant, library,
span_of)` is a warning (E0528, at the first such fault's declaration) when that is the whole
repair, which an agent that restarts or reloads everything without a diagnosis then earns reward 1
for (the qualification's `restart-everything` adversary: the variant measures nothing). That is so
when
- every fault the oracle repairs is such a fault and does not come back: no `recur`, an onset at
  the start or after a delay (not periodic, conditional or in the agent's window), no `survives
  retrigger` of it, and everything its injection changed may be changed by the agent (`changes
  only`; a reload that reverts a setting out of scope fails the safety gate);
- every other fault (a decoy, or one to be left on) outlives a restart, so a restart leaves it as
  it is (one that a restart switched off would be an out-of-scope change).
A fault held by a datastore (a Redis CONFIG SET or ACL) is undone only by restarting the datastore,
which also loses what it holds when, as the task has it healthy, it keeps nothing on disk (spine's
Redis with `appendonly` "no"): it counts as undone above when the safety gate protects nothing such
a datastore holds (no `protect queue` of a queue in a datastore that keeps nothing across a
restart), so the restart loses nothing a gate sees (inbox-backlog's run-time memory cap:
restart-everything earned reward 1; and a task whose `healthy` block makes Redis persist its queue,
where the restart undoes the fault and keeps the queue); with such a `protect queue`, whether the
loss is noticed is for the qualification to find.
A heuristic, like E0522: the qualification is what proves a variant; this names the likely cause
before any episode runs.
"""

from __future__ import annotations

from collections.abc import Callable

from arenac.core.diagnostics import Diagnostic
from arenac.core.source import Span
from arenac.model.actions import touched_targets
from arenac.model.gates import ChangesOnly, ProtectQueue, SurvivesRetrigger
from arenac.model.library import FaultTemplate, Library
from arenac.model.task import ConcreteFault, Variant

_RESTART_UNDOES_ONSETS = frozenset({"at_start", "after"})


def blind_restart_warning(variant: Variant, library: Library, span_of: Callable[[str], Span]) -> Diagnostic | None:
    """E0528 when restarting everything repairs VARIANT; SPAN_OF: where a fault is declared."""
    repaired = {step.target for step in variant.spec.oracle if step.kind == "repair"}
    retriggered = {f for check in variant.spec.gates.safety if isinstance(check, SurvivesRetrigger)
                   for f in check.faults}
    scopes = [check for check in variant.spec.gates.safety if isinstance(check, ChangesOnly)]
    datastore_data_protected = _loses_protected_queue(variant, library)
    undone: list[tuple[ConcreteFault, FaultTemplate]] = []
    for fault in variant.faults:
        template = _template(library, fault)
        if template is None:
            return None
        durable = fault.layer in template.durable_in
        if fault.name not in repaired or fault.decoy:
            if not durable:
                return None  # a restart would switch it off: a change the agent was not to make
            continue
        if durable or fault.recur_after_declare_s is not None or fault.onset.kind not in _RESTART_UNDOES_ONSETS:
            return None
        kinds = {action.kind for action in fault.inject}
        in_memory = kinds == {"admin"} or (kinds == {"redis"} and not datastore_data_protected)
        if not in_memory:
            return None  # not (only) in a process's memory, or its restart loses what a gate protects
        if fault.name in retriggered:
            return None
        permitted = [target for scope in scopes for target in scope.targets]
        if scopes and not all(any(p.covers(t) for p in permitted) for t in touched_targets(fault.inject)):
            return None  # the restart reverts a setting out of scope: the safety gate fails it
        undone.append((fault, template))
    if not undone:
        return None
    fault, template = undone[0]
    names = ", ".join(f"'{f.name}' ({f.layer} layer)" for f, _ in undone)
    lasting = " or ".join(f"the {layer} layer" for layer in template.durable_in) or "no layer"
    return Diagnostic(
        "E0528", f"an admin reload or a restart undoes {'fault' if len(undone) == 1 else 'faults'} {names}, the "
        f"whole repair: template '{template.name}' outlives a restart only at {lasting}, so an agent that restarts "
        "or reloads everything without a diagnosis passes this variant (the qualification's restart-everything "
        "earns reward 1)",
        span_of(fault.name),
        f"leave the {fault.layer} layer out of `layer = ...`, or give the fault a mechanism that outlives a restart",
        severity="warning")


def _loses_protected_queue(variant: Variant, library: Library) -> bool:
    """Whether the safety gate protects a queue whose datastore keeps nothing across a restart, as
    the task has it healthy (the descriptor's `keeps_data_when` against `TaskSpec.healthy_config`):
    then restarting that datastore loses what a gate sees."""
    entry = library.substrates.get(variant.spec.substrate)
    if entry is None:
        return True
    substrate = entry.descriptor
    holders = {queue.name: queue.datastore for queue in substrate.queues}
    for check in variant.spec.gates.safety:
        if not isinstance(check, ProtectQueue):
            continue
        for queue in check.queues:
            datastore = substrate.service(holders.get(queue) or "")
            if datastore is None or not datastore.keeps_data(variant.spec.healthy_config(datastore)):
                return True
    return False


def _template(library: Library, fault: ConcreteFault) -> FaultTemplate | None:
    substrate, _, name = fault.template.partition(".")
    entry = library.substrates.get(substrate)
    return None if entry is None else entry.faults.get(name)
