"""Static checks over a lowered task and its variants.

Task checks: every onset falls inside the agent window; a recurrence fires inside the
soak (before its end here; after its start, and onsets a layer can honour: checks/timing.py);
a decoy comes with a `changes only`; the soak covers at least one full load cycle; an impossible
matrix (every cell pruned) is an error. Variant checks: the oracle never touches what the safety gate
protects, stays within `changes only`, and leaves every guard holding (a richer guard over
config keys too: one it cannot decide before a run, over other targets, passes); `changes only`
does not permit what fixing a decoy would change; a `survives restart` restarts every volatile
datastore a fault's repair acts on (E0513: else a run-time repair there, which only that
datastore's restart undoes, passes as durable); the oracle restarts nothing `never restarted`
forbids (E0525); the agent's RBAC, as the bundle will hold it, passes the least-privilege lint
given what the surface allows (E0406); no fault's chart values set a key the task's `healthy`
block sets (E0532). The oracle's end state starts from the healthy stack as the task has it (the
descriptor's healthy values with the `healthy` settings over them).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from arenac.checks.timing import check_timing
from arenac.core.diagnostics import Collector
from arenac.core.source import Span
from arenac.core.units import format_seconds
from arenac.k8s.rbac_lint import RbacProblem, lint_rbac
from arenac.lower.task import LoweredTask
from arenac.model.actions import (
    ActionHandler,
    AdminAction,
    KubectlAction,
    RedisAction,
    SendBurstAction,
    SqlAction,
    Target,
    ValuesAction,
    dispatch,
    held,
    injected_targets,
)
from arenac.model.gates import ChangesOnly, FaultRemoved, Guard, GuardExpr, NeverRestarted, Protect, SurvivesRestart
from arenac.model.guards import UNKNOWN, Reader, Reading, evaluate, targets_of
from arenac.model.substrate import Substrate
from arenac.model.task import ConcreteFault, PrunedCell, Variant, cell_words, waits_before_repair
from arenac.render.rbac import rbac_objects

_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt}


def check_task(lowered: LoweredTask, errors: Collector) -> None:
    spec, spans = lowered.spec, lowered.spans
    for fault in spec.faults:
        latest = fault.onset.latest_start_s
        if latest >= spec.window_s:
            errors.error("E0501", f"fault '{fault.name}' fires at {format_seconds(latest)}, after the agent window "
                         f"of {format_seconds(spec.window_s)} has ended", spans.onsets[fault.name],
                         "move the onset earlier or lengthen `window`")
        if fault.recur_after_declare_s is not None and fault.recur_after_declare_s >= spec.soak_s:
            errors.error("E0501", f"fault '{fault.name}' recurs {format_seconds(fault.recur_after_declare_s)} after "
                         f"the declaration, after the soak of {format_seconds(spec.soak_s)} has ended",
                         spans.recurs[fault.name], "shorten the delay or lengthen `soak`")
    check_timing(lowered, errors)
    if not any(isinstance(check, ChangesOnly) for check in spec.gates.safety):
        for fault in (f for f in spec.faults if f.decoy):
            errors.error("E0510", f"decoy '{fault.name}' needs a `changes only` in the safety gate, or an agent "
                         "that fixes it goes unnoticed", spans.faults[fault.name],
                         "add `changes only` naming what the real repair changes")
    cycle = spec.load.cycle_s
    if spec.soak_s < cycle:
        errors.error("E0502", f"the soak ({format_seconds(spec.soak_s)}) is shorter than one load cycle "
                     f"({format_seconds(cycle)} in '{spec.load.name}')", spans.settings.get("soak", spans.task),
                     f"set `soak = {format_seconds(cycle)}` or more")


def check_matrix(lowered: LoweredTask, built: int, pruned: Sequence[PrunedCell], errors: Collector) -> None:
    """A matrix whose every cell was pruned is an impossible combination (E0403)."""
    spec, spans = lowered.spec, lowered.spans
    if not built and pruned:
        reasons = sorted({cell.reason for cell in pruned})
        errors.error("E0403", f"no variant of task '{spec.name}' can be built: {reasons[0]}",
                     spans.access.get(spec.access[0].name, spans.task) if spec.access else spans.task,
                     "; ".join(reasons[1:3]) or "grant the access the repair needs, or pick another layer")


def check_variant(lowered: LoweredTask, variant: Variant, errors: Collector) -> None:
    spec, spans = lowered.spec, lowered.spans
    where = _cell(variant)
    safety = spec.gates.safety
    protected = [(i, t) for i, check in enumerate(safety) if isinstance(check, Protect) for t in check.targets]
    permitted = [t for check in safety if isinstance(check, ChangesOnly) for t in check.targets]
    has_scope = any(isinstance(check, ChangesOnly) for check in safety)
    reported: set[str] = set()
    oracle = "the oracle" if spans.oracle is not None else "the default oracle"  # no `oracle { }`: see lower/task.py
    for fault in variant.faults:
        if fault.decoy:
            if has_scope:
                _check_decoy(fault, permitted, spans.faults.get(fault.name, spans.task), where, errors)
            continue
        if not fault.repair:
            continue
        span = spans.repairs.get(fault.name, spans.task)
        for touched in fault.touches:
            for _, target in protected:
                if target.covers(touched) or touched.covers(target):
                    key = f"E0507{fault.name}{touched}"
                    if key not in reported:
                        reported.add(key)
                        errors.error("E0507", f"{oracle}'s repair of '{fault.name}' changes {touched}, which the "
                                     f"safety gate protects{where}", span)
            if has_scope and not any(p.covers(touched) for p in permitted):
                key = f"E0509{fault.name}{touched}"
                if key not in reported:
                    reported.add(key)
                    errors.error("E0509", f"{oracle}'s repair of '{fault.name}' changes {touched}, which "
                                 f"`changes only` does not permit{where}", span,
                                 f"add {_spelled(touched)} to `changes only`")
    _check_durability(lowered, variant, where, errors)
    _check_in_window(lowered, variant, where, errors)
    _check_never_restarted(lowered, variant, where, errors)
    _check_fault_removed(lowered, variant, where, errors)
    _check_rbac(lowered, variant, where, errors)
    _check_healthy_overwritten(lowered, variant, where, errors)
    end_state = oracle_end_state(variant, lowered.substrate)
    for index, check in enumerate(safety):
        if isinstance(check, Guard) and check.target.kind == "config":
            value = end_state.get(check.target.ref)
            if value is None:
                continue
            if not _holds(value, check.op, check.value):
                errors.error("E0508", f"guard `{check.text}` fails in {oracle}'s end state "
                             f"({check.target} = {value}){where}", spans.safety.get(index, spans.task))
        if isinstance(check, GuardExpr) and evaluate(check.condition, _end_state_reader(end_state)) is False:
            values = ", ".join(f"{t} = {end_state[t.ref]}" for t in targets_of(check.condition) if t.kind == "config")
            errors.error("E0508", f"guard `{check.text}` fails in {oracle}'s end state ({values}){where}",
                         spans.safety.get(index, spans.task))


def _end_state_reader(end_state: dict[str, str]) -> Reader:
    """How a richer guard reads the oracle's end state: config keys from it; anything else (a
    database setting, a release) is not known before a run, so it decides nothing."""
    def read(target: Target) -> Reading:
        if target.kind != "config" or target.ref not in end_state:
            return UNKNOWN
        return end_state[target.ref]
    return read


# how long after its onset in the agent's window a fault's injection has surely landed (the oracle
# starts with the agent, a fraction of a second after the window opens)
IN_WINDOW_MARGIN_S = 5.0


def _check_in_window(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """A fault fired in the agent's window (`after agent start + D`) must be able to show within its
    template's bound before the window ends, or the agent could never see it (E0526); the oracle
    must wait for it before repairing it, or the injection would undo the repair (E0527)."""
    window, steps = lowered.spec.window_s, lowered.spec.oracle
    for fault in variant.faults:
        if not fault.fires_in_window:
            continue
        waited = sum(steps[index].duration_s or 0.0 for index in waits_before_repair(steps, fault.name))
        needed = fault.onset.after_s + IN_WINDOW_MARGIN_S
        if waited < needed:
            when = f"{format_seconds(waited)} into the agent window" if waited else "as the agent window opens"
            errors.error("E0527", f"the oracle repairs '{fault.name}' {when}, "
                         f"before the fault fires ({format_seconds(fault.onset.after_s)} after the agent starts)"
                         f"{where}",
                         lowered.spans.repairs.get(fault.name, lowered.spans.task),
                         f"wait first: `wait {format_seconds(needed - waited)}`{' more' if waited else ''} before "
                         f"`repair {fault.name}`")
        end = fault.onset.after_s + fault.manifest_within_s
        if end > window:
            errors.error("E0526", f"fault '{fault.name}' fires {format_seconds(fault.onset.after_s)} into the agent "
                         f"window and may take {format_seconds(fault.manifest_within_s)} to show, past the window "
                         f"of {format_seconds(window)}: the agent could never see it{where}",
                         lowered.spans.onsets.get(fault.name, lowered.spans.task),
                         f"fire it earlier, or lengthen `window` to at least {format_seconds(end)}")


# the kubectl verbs that replace a workload's pod (a ConfigMap patch alone rewrites a file)
_RESTARTING_VERBS = frozenset({"rollout_restart", "set_image", "delete_pods", "scale"})


def _check_never_restarted(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """E0525: the oracle's repair restarts a workload `never restarted` forbids, so the correct fix
    could never pass."""
    spans = lowered.spans
    for index, check in enumerate(lowered.spec.gates.safety):
        if not isinstance(check, NeverRestarted):
            continue
        for fault in variant.faults:
            restarted = sorted({b.action.service for b in fault.repair if isinstance(b.action, KubectlAction)
                                and b.action.verb in _RESTARTING_VERBS and b.action.service in check.services})
            for service in restarted:
                errors.error("E0525", f"the oracle's repair of '{fault.name}' restarts {service}, which "
                             f"`never restarted` forbids{where}", spans.safety.get(index, spans.task),
                             "a repair that needs a rollout cannot pass it: drop the service or repair at run time")


def _check_fault_removed(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """E0531: `fault removed(F)` compares the state F's injection changed as the agent found it
    (agent_start) with the state at soak end, so F must be a fault the oracle repairs (a decoy is
    never the cause), injected before the agent starts (an in-window fault's injected state is in
    no snapshot before the agent acts) and not again during the soak (a recurrence's state would be
    judged as the agent's), and its injection at this layer must change something the snapshots
    hold (a held lock or killed sessions leave nothing to compare). A periodic fault (`every`) is
    refused as a recurring one is."""
    spans = lowered.spans
    repaired = {step.target for step in lowered.spec.oracle if step.kind == "repair"}
    faults = {fault.name: fault for fault in variant.faults}
    for index, check in enumerate(lowered.spec.gates.safety):
        if not isinstance(check, FaultRemoved):
            continue
        span = spans.safety.get(index, spans.task)
        for name in check.faults:
            fault = faults[name]
            if fault.decoy or name not in repaired:
                why = "a decoy, never the cause" if fault.decoy else "a fault the oracle does not repair"
                errors.error("E0531", f"`fault removed({name})`: '{name}' is {why}, so its mechanism is not "
                             f"the agent's to remove{where}", span, "name the faults the oracle repairs")
            elif fault.onset.kind == "in_window":
                errors.error("E0531", f"`fault removed({name})`: '{name}' fires in the agent's window, so no snapshot "
                             f"holds its injected state before the agent acts{where}", span,
                             "judge it by its outcome, or fire it before the agent starts")
            elif fault.recur_after_declare_s is not None or fault.onset.kind == "every":
                again = "recurs during the soak" if fault.recur_after_declare_s is not None else "fires periodically"
                errors.error("E0531", f"`fault removed({name})`: '{name}' {again}, so its state at soak end is "
                             f"the harness's, not the agent's{where}", span,
                             "drop the recurrence, or judge it with `survives retrigger`")
            elif not held(injected_targets(fault.inject)):
                # a chart value outside `services.` (a datastore's, redis.maxmemory) is tied to the
                # recorded setting it becomes only by the action's `touches`: without it, nothing
                unmapped = [a.path for a in fault.inject if isinstance(a, ValuesAction)]
                what = (f"sets only the chart value {', '.join(unmapped)}, which declares no recorded setting "
                        "it becomes (`touches`)" if unmapped else "changes nothing the state snapshots hold")
                errors.error("E0531", f"`fault removed({name})`: the injection of '{name}' at the {fault.layer} layer "
                             f"{what}, so whether it was removed cannot be told{where}", span,
                             "judge it by its outcome, or `survives retrigger`")


def _check_healthy_overwritten(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """E0532: a fault whose injection sets, in the chart's values, a key the task's `healthy` block
    sets. The fault's value would overwrite the healthy one in its variants (the chart's overlay
    applies the faults' values last), so they would never run the stack the healthy control runs
    with that key, and the template's repair restores the substrate's own healthy value, not the
    task's: the two say different things of one key. Reported at the healthy setting."""
    spans = lowered.spans
    for setting in lowered.spec.healthy:
        for fault in variant.faults:
            overwriting = [a for a in fault.inject
                           if isinstance(a, ValuesAction) and _overlaps(a.path, setting.values_path)]
            for action in overwriting[:1]:
                restored = [b.action.data[setting.key] for b in fault.repair if isinstance(b.action, KubectlAction)
                            and b.action.service == setting.service and setting.key in b.action.data]
                repair = f"its repair restores '{restored[0]}'" if restored else "its repair knows nothing of it"
                errors.error("E0532", f"fault '{fault.name}' ({fault.layer} layer) sets config({setting.ref}) in the "
                             f"chart too ('{action.value}'): it would overwrite the healthy block's "
                             f"'{setting.value}', so its variants never run the task's healthy value, and {repair}"
                             f"{where}",
                             spans.healthy.get(setting.ref, spans.task),
                             f"leave config({setting.ref}) out of `healthy`, or keep fault '{fault.name}' off the "
                             f"{fault.layer} layer")


def _overlaps(path: str, other: str) -> bool:
    """Two chart values paths set the same value, or one sets a mapping that holds the other."""
    return path == other or path.startswith(other + ".") or other.startswith(path + ".")


def _check_rbac(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """The agent's RBAC objects, rendered as the bundle's rbac/ will hold them (the same
    `rbac_objects`), pass the least-privilege lint given the surface's `allow` (E0406), reported
    at the access alternative that chose the surface. Lowering already rejects every grant the
    language can write that the lint would, so this holds the rendering to the same rule: a change
    to it (a default rule, a merge) that widens the agent's grants fails here, not in a cluster."""
    surface = variant.access
    span = lowered.spans.access.get(surface.name, lowered.spans.task)
    for problem in lint_rbac(rbac_objects(surface, variant.task, variant.id), frozenset(surface.allow)):
        errors.error("E0406", f"access '{surface.name}' renders RBAC that least privilege forbids: "
                     f"{_rbac_place(problem)} {problem.message}{where}", span, _rbac_hint(problem))


def _rbac_place(problem: RbacProblem) -> str:
    rule = "" if problem.rule is None else f" rules[{problem.rule}]"
    return f"{problem.kind} '{problem.name}'{rule}"


def _rbac_hint(problem: RbacProblem) -> str:
    if problem.grant is None:
        return "give the verbs a name cannot restrict (list, watch, create, deletecollection, *) a rule without names"
    return f"add `allow {problem.grant}` if the task really needs it"


def _check_durability(lowered: LoweredTask, variant: Variant, where: str, errors: Collector) -> None:
    """A repair acting on a volatile datastore (Redis: its CONFIG SET and ACL SETUSER live until it
    restarts) is proven durable only by restarting that datastore. Restarting the application
    services alone cannot tell the durable repair (the ConfigMap plus a rollout) from a run-time
    one, so a `survives restart` that leaves the datastore out is an error (E0513) rather than a
    unit the compiler adds silently: restarting a datastore has a cost the author should see in the
    gate (Redis loses its queue and inboxes), and the gate then does what it says."""
    spec, spans = lowered.spec, lowered.spans
    restarts = [(i, c) for i, c in enumerate(spec.gates.safety) if isinstance(c, SurvivesRestart)]
    if not restarts:
        return  # the task does not ask for durability
    restarted = {s for _, check in restarts for s in check.services}
    volatile = {s.name for s in lowered.substrate.services if s.volatile}
    index, first = restarts[0]
    for fault in variant.faults:
        if fault.decoy:
            continue
        touched = {dispatch(b.action, _ActsOn()) for b in fault.repair}
        stores = sorted((volatile - restarted) & touched)
        for store in stores:
            errors.error("E0513", f"`survives restart({', '.join(first.services)})` cannot prove that a repair of "
                         f"'{fault.name}' is durable: it acts on {store}, whose run-time changes only a restart of "
                         f"{store} undoes{where}", spans.safety.get(index, spans.task),
                         f"restart {store} too: `survives restart({', '.join((*first.services, store))})`")


class _ActsOn(ActionHandler[str | None]):
    """The service or datastore an action acts on (a kubectl or admin action names its service)."""

    def on_kubectl(self, action: KubectlAction) -> str:
        return action.service

    def on_admin(self, action: AdminAction) -> str:
        return action.service

    def on_sql(self, action: SqlAction) -> str:
        return "postgres"

    def on_redis(self, action: RedisAction) -> str:
        return "redis"

    # the harness alone performs these, never in a repair (HARNESS_ONLY)
    def on_values(self, action: ValuesAction) -> None:
        return None

    def on_send_burst(self, action: SendBurstAction) -> None:
        return None


def _check_decoy(fault: ConcreteFault, permitted: list[Target], span: Span, where: str, errors: Collector) -> None:
    """A decoy is there to catch an agent that "fixes" it, which only `changes only` can see."""
    covered = [t for t in fault.touches if any(p.covers(t) for p in permitted)]
    if covered:
        errors.error("E0510", f"`changes only` permits {covered[0]}, which fixing decoy '{fault.name}' changes, so "
                     f"an agent that does it goes unnoticed{where}", span, f"leave {covered[0]} out of `changes only`")


def oracle_end_state(variant: Variant, substrate: Substrate) -> dict[str, str]:
    """Config values (`service.KEY`) after injection and the oracle's repairs, from the healthy
    stack as the task has it (the descriptor's values with its `healthy` settings over them)."""
    state = {f"{s.name}.{k}": v for s in substrate.services for k, v in variant.spec.healthy_config(s).items()}
    for fault in variant.faults:
        for action in (*fault.inject, *(bound.action for bound in fault.repair)):
            state.update(dispatch(action, _ConfigWrites()))
    return state


class _ConfigWrites(ActionHandler[dict[str, str]]):
    """The config values (`service.KEY`: value) an action sets."""

    def on_values(self, action: ValuesAction) -> dict[str, str]:
        if action.path.startswith("services.") and ".config." in action.path:
            service, _, key = action.path[len("services."):].partition(".config.")
            return {f"{service}.{key}": str(action.value)}
        return {}

    def on_kubectl(self, action: KubectlAction) -> dict[str, str]:
        if action.verb == "patch_configmap":
            return {f"{action.service}.{k}": v for k, v in action.data.items()}
        return {}

    def on_admin(self, action: AdminAction) -> dict[str, str]:
        if action.path == "/admin/config":
            return {f"{action.service}.{k}": str(v) for k, v in action.body.items()}
        return {}

    def on_sql(self, action: SqlAction) -> dict[str, str]:
        return {}

    def on_redis(self, action: RedisAction) -> dict[str, str]:
        return {}

    def on_send_burst(self, action: SendBurstAction) -> dict[str, str]:
        return {}


def _spelled(target: Target) -> str:
    """A target as a spec writes it: grant(messages.INSERT) is `grant(messages, INSERT)`."""
    if target.kind == "grant" and "." in target.ref:
        table, _, privilege = target.ref.rpartition(".")
        return f"grant({table}, {privilege})"
    return str(target)


def _holds(value: str, op: str, bound: float | str) -> bool:
    try:
        return bool(_OPS[op](float(value), float(bound)))
    except (TypeError, ValueError):
        return bool(_OPS[op](str(value), str(bound))) if op in ("==", "!=") else False


def _cell(variant: Variant) -> str:
    return f" (variant {cell_words(variant.coordinates)})"  # arenac.pipeline merges a repeat by it


__all__ = ["Target", "check_matrix", "check_task", "check_variant", "oracle_end_state"]
