"""Lower one task declaration into a `TaskSpec`.

Resolution order for unqualified names: definitions in the spec file itself, then the
task's substrate namespace, then modules brought in with `use`. Every problem in the
task is collected; the caller raises them together.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.units import Dimension, format_quantity
from arenac.lower.access import lower_access
from arenac.lower.exprs import ExprContext, lower_predicate
from arenac.lower.gates import GateLowering
from arenac.lower.library import LibraryMacros, Namespace
from arenac.lower.load import lower_load
from arenac.lower.source_map import SourceMap
from arenac.model.access import AccessSurface
from arenac.model.library import LAYERS, FaultTemplate, Library, SubstrateEntry
from arenac.model.substrate import Substrate
from arenac.model.task import FaultSpec, Onset, OracleStep, TaskSpec
from arenac.syntax import ast
from arenac.syntax.unparse import value_text

SETTINGS = ("title", "instruction", "substrate", "load", "window", "soak")
DEFAULT_WINDOW_S = 600.0
DEFAULT_SOAK_S = 120.0
_PARAM_DIMENSIONS = {"int": Dimension.number, "duration": Dimension.duration, "size": Dimension.size,
                     "fraction": Dimension.fraction}


@dataclass(frozen=True)
class LoweredTask:
    """A task's IR, the descriptor of the substrate it runs on, and where its parts were
    written, for the later checks to point at."""

    spec: TaskSpec
    substrate: Substrate
    spans: SourceMap


def lower_task(task: ast.TaskDecl, module: ast.Module, library: Library, macros: LibraryMacros,
               errors: Collector) -> LoweredTask | None:
    before = len(errors.items)
    settings = _settings(task, errors)
    spans = SourceMap(task=task.name.span, settings={key: value.span for key, value in settings.items()})
    substrate_ref = settings.get("substrate")
    if substrate_ref is None:
        errors.error("E0206", f"task '{task.name.text}' names no substrate", task.name.span, "add `substrate = spine`")
        return None
    substrate_name = _text(substrate_ref)
    entry = library.substrates.get(substrate_name)
    if entry is None:
        errors.error("E0202", f"unknown substrate '{substrate_name}'", substrate_ref.span,
                     did_you_mean(substrate_name, library.substrates))
        return None
    substrate = entry.descriptor
    namespace = _namespace(task, module, library, macros, entry, errors)

    title = _string(settings, "title", task, errors)
    instruction = _string(settings, "instruction", task, errors)
    load = _resolve(settings.get("load"), "load profile", namespace.loads, errors, default="standard",
                    substrate=substrate_name, span=task.name.span)
    window_s = _duration(settings.get("window"), DEFAULT_WINDOW_S, errors, "the agent window")
    soak_s = _duration(settings.get("soak"), DEFAULT_SOAK_S, errors, "the soak")
    phases = tuple(p.name for p in load.phases) + ((load.warmup.name,) if load.warmup else ()) if load else ()
    ctx = ExprContext(substrate=substrate, phases=phases, collector=errors)

    faults: list[FaultSpec] = []
    fault_decls = [s for s in task.statements if isinstance(s, ast.FaultDecl)]
    seen_faults: set[str] = set()
    for decl in fault_decls:
        if decl.name.text in seen_faults:
            errors.error("E0208", f"fault '{decl.name.text}' is declared twice", decl.name.span)
            continue
        seen_faults.add(decl.name.text)
        spans.faults[decl.name.text] = decl.name.span
        spans.onsets[decl.name.text] = decl.onset.span if decl.onset else decl.name.span
        if decl.recur is not None:
            spans.recurs[decl.name.text] = decl.recur.span
        fault = _fault(decl, entry.faults, substrate_name, ctx)
        if fault is not None:
            faults.append(fault)
    if not any(not decl.decoy for decl in fault_decls):
        errors.error("E0206", f"task '{task.name.text}' declares no fault" + (" (only decoys)" if fault_decls else ""),
                     task.name.span, "add e.g. `fault pool = spine.pool_size(service: message, size: 4)`")
    decoys = {decl.name.text for decl in fault_decls if decl.decoy}

    access = _access_choice(task, namespace, errors, spans)
    gates = GateLowering(ctx, namespace.macros, tuple(seen_faults), spans).lower(
        [s for s in task.statements if isinstance(s, ast.GateDecl)], task.name.span)
    oracle = _oracle(task, fault_decls, seen_faults, decoys, errors, spans)
    if len(errors.items) > before or load is None or gates is None:
        return None
    spec = TaskSpec(
        name=task.name.text, source=module.file, title=title, instruction=instruction, substrate=substrate_name,
        load=load, window_s=window_s, soak_s=soak_s, faults=tuple(faults), access=tuple(access), gates=gates,
        oracle=tuple(oracle),
    )
    return LoweredTask(spec, substrate, spans)


def _settings(task: ast.TaskDecl, errors: Collector) -> dict[str, ast.Value]:
    found: dict[str, ast.Value] = {}
    for stmt in task.statements:
        if not isinstance(stmt, ast.Setting):
            continue
        key = stmt.key.text
        if key not in SETTINGS:
            errors.error("E0201", f"unknown setting '{key}'", stmt.key.span,
                         did_you_mean(key, SETTINGS) or f"settings are: {', '.join(SETTINGS)}")
        elif key in found:
            errors.error("E0208", f"setting '{key}' is given twice", stmt.key.span)
        else:
            if len(stmt.alternatives) > 1:
                errors.error("E0401", f"'{key}' takes one value; only layer, access and fault arguments have "
                             "alternatives", stmt.alternatives[1].span)
            found[key] = stmt.alternatives[0]  # even after E0401: the setting is there, not missing
    return found


def _namespace(task: ast.TaskDecl, module: ast.Module, library: Library, macros: LibraryMacros,
               entry: SubstrateEntry, errors: Collector) -> Namespace:
    """Local definitions shadow used modules, which shadow the substrate's."""
    own = entry.descriptor.name
    ns = Namespace(dict(entry.access), dict(entry.loads), dict(macros.substrates[own]))
    uses = list(module.uses) + [s for s in task.statements if isinstance(s, ast.Use)]
    for use in uses:
        name = use.path.text
        if name in library.substrates:
            other = library.substrates[name]
            ns.access.update(other.access), ns.loads.update(other.loads), ns.macros.update(macros.substrates[name])
        elif name in macros.modules:
            ns.macros.update(macros.modules[name])
        else:
            errors.error("E0202", f"unknown library module '{name}'", use.path.span,
                         did_you_mean(name, list(library.substrates) + list(macros.modules)))
    entry_substrate = entry.descriptor
    for defn in module.access_defs + tuple(s for s in task.statements if isinstance(s, ast.AccessDef)):
        surface = lower_access(defn, entry_substrate, errors)
        if surface is not None:
            ns.access[surface.name] = surface
        else:  # already reported; do not report its uses as unknown too
            ns.broken.add(defn.name.text)
    for load_def in module.loads:
        profile = lower_load(load_def, entry_substrate, errors)
        if profile is not None:
            ns.loads[profile.name] = profile
    ns.macros.update({m.name.text: m for m in module.macros})
    return ns


def _resolve(value, what: str, table: dict, errors: Collector, default: str, substrate: str, span):
    if value is None:
        if default in table:
            return table[default]
        errors.error("E0206", f"no {what} given and no default '{default}'", span)
        return None
    name = _text(value)
    if not isinstance(value, ast.Ref):
        errors.error("E0305", f"{what} is a name, not '{name}'", value.span)
        return None
    short = name[len(substrate) + 1:] if name.startswith(substrate + ".") else name
    if short not in table:
        errors.error("E0202", f"unknown {what} '{name}'", value.span, did_you_mean(short, table))
        return None
    return table[short]


def _string(settings, key: str, task: ast.TaskDecl, errors: Collector) -> str:
    value = settings.get(key)
    if value is None:
        errors.error("E0206", f"task '{task.name.text}' has no {key}", task.name.span, f'add `{key} = "..."`')
        return ""
    if not isinstance(value, ast.StringLit):
        errors.error("E0305", f"{key} is a string", value.span, f'write `{key} = "..."`')
        return ""
    if not value.value.strip():
        errors.error("E0307", f"{key} is empty", value.span)
    return value.value


def _duration(value, default: float, errors: Collector, what: str) -> float:
    """A positive duration setting (window, soak), or its default when absent or in error."""
    if value is None:
        return default
    if not isinstance(value, ast.QuantityLit) or value.quantity.dimension != Dimension.duration:
        errors.error("E0302", f"expected a duration, found '{_text(value)}'", value.span, "e.g. 10m or 90s")
        return default
    if not _positive(value, what, errors):
        return default
    return value.quantity.value


def _positive(value: ast.QuantityLit, what: str, errors: Collector, hint: str = "e.g. 10m or 90s") -> bool:
    """Report (E0307) a duration that must be longer than zero and is not."""
    if value.quantity.value > 0:
        return True
    errors.error("E0307", f"{what} must be longer than 0s, not {value.quantity.text}", value.span, hint)
    return False


def _text(value) -> str:
    return value_text(value)


# ---- faults -------------------------------------------------------------------------


def _fault(decl: ast.FaultDecl, templates: dict[str, FaultTemplate], substrate: str, ctx: ExprContext):
    errors = ctx.collector
    name = decl.call.func.text
    short = name[len(substrate) + 1:] if name.startswith(substrate + ".") else name
    template = templates.get(short)
    if template is None:
        errors.error("E0202", f"unknown fault template '{name}'", decl.call.func.span,
                     did_you_mean(short, templates))
        return None
    args = _fault_args(decl, template, ctx)
    layers = _layers(decl, template, errors)
    onset = _onset(decl.onset, ctx) if decl.onset else Onset(kind="at_start")
    recur = None
    if decl.recur is not None:
        recur = decl.recur.delay.quantity.value if decl.recur.delay else 0.0
        if decl.recur.delay and decl.recur.delay.quantity.dimension != Dimension.duration:
            errors.error("E0302", "recur delay is a duration", decl.recur.delay.span)
    for setting in decl.settings:
        if setting.key.text != "layer":
            errors.error("E0201", f"unknown fault setting '{setting.key.text}'", setting.key.span,
                         did_you_mean(setting.key.text, ("layer", "onset", "recur")))
    if args is None or layers is None or onset is None:
        return None
    return FaultSpec(name=decl.name.text, template=f"{substrate}.{template.name}", args=args, layers=layers,
                     onset=onset, recur_after_declare_s=recur, decoy=decl.decoy)


def _fault_args(decl: ast.FaultDecl, template: FaultTemplate, ctx: ExprContext):
    errors = ctx.collector
    params = {p.name: p for p in template.params}
    order = [p.name for p in template.params]
    values: dict[str, tuple] = {}
    ok = True
    for position, arg in enumerate(decl.call.args):
        key = arg.name.text if arg.name else (order[position] if position < len(order) else None)
        if key is None or key not in params:
            errors.error("E0205", f"fault template '{template.name}' has no parameter '{key or position + 1}'",
                         arg.name.span if arg.name else arg.span, did_you_mean(key or "", order))
            ok = False
            continue
        if key in values:
            errors.error("E0208", f"argument '{key}' is given twice", arg.span)
            ok = False
            continue
        converted = [_arg_value(v, params[key], ctx) for v in arg.alternatives]
        if any(c is None for c in converted):
            ok = False
            values[key] = ()  # reported already; not "missing"
            continue
        values[key] = tuple(converted)
    for param in template.params:
        if param.name not in values:
            if param.default is None:
                errors.error("E0206", f"fault template '{template.name}' needs '{param.name}'", decl.call.span,
                             f"add `{param.name}: ...`")
                ok = False
            else:
                values[param.name] = (param.default,)
    return dict(sorted(values.items())) if ok else None


def _arg_value(value, param, ctx: ExprContext):
    errors = ctx.collector
    substrate = ctx.substrate
    if param.type in _PARAM_DIMENSIONS:
        want = _PARAM_DIMENSIONS[param.type]
        if isinstance(value, ast.NumberLit):
            got, number = Dimension.number, value.value
        elif isinstance(value, ast.QuantityLit):
            got, number = value.quantity.dimension, value.quantity.value
        else:
            errors.error("E0302", f"'{param.name}' is {_type_words(param.type)}, not '{_text(value)}'", value.span)
            return None
        if got != want:
            errors.error("E0302", f"'{param.name}' is {_type_words(param.type)}, not '{_text(value)}'", value.span,
                         _example(param.type))
            return None
        if param.type == "int" and not float(number).is_integer():
            errors.error("E0302", f"'{param.name}' is a whole number", value.span)
            return None
        if (param.min is not None and number < param.min) or (param.max is not None and number > param.max):
            errors.error("E0308", f"'{param.name}' = {_text(value)} is out of range", value.span,
                         "allowed: " + _range_words(param.min, param.max, want))
            return None
        return int(number) if param.type == "int" else number
    if isinstance(value, ast.StringLit):
        text = value.value
    elif isinstance(value, ast.Ref):
        text = value.text
    else:
        errors.error("E0302", f"'{param.name}' is a name, not '{_text(value)}'", value.span)
        return None
    known = {
        "service": [s.name for s in substrate.services],
        "table": [t.name for t in substrate.tables],
        "role": list(substrate.db_roles),
        "release": [r.name for r in substrate.releases],
        "event": list(substrate.event_names),
    }.get(param.type)
    if known is not None and text not in known:
        errors.error("E0203", f"unknown {param.type} '{text}'", value.span, did_you_mean(text, known))
        return None
    return text


def _range_words(low: float | None, high: float | None, dimension: Dimension) -> str:
    """A template parameter's range in the units an author writes: `1Ki to 1Gi`, `at most 10m`."""
    if low is not None and high is not None:
        return f"{format_quantity(low, dimension)} to {format_quantity(high, dimension)}"
    if low is not None:
        return f"at least {format_quantity(low, dimension)}"
    assert high is not None  # a range has a bound
    return f"at most {format_quantity(high, dimension)}"


def _type_words(kind: str) -> str:
    return {"int": "a whole number", "duration": "a duration", "size": "a size", "fraction": "a percentage"}[kind]


def _example(kind: str) -> str:
    return {"int": "e.g. 4", "duration": "e.g. 350ms", "size": "e.g. 64Mi", "fraction": "e.g. 5%"}[kind]


def _layers(decl: ast.FaultDecl, template: FaultTemplate, errors: Collector):
    setting = next((s for s in decl.settings if s.key.text == "layer"), None)
    if setting is None:
        return tuple(layer for layer in LAYERS if layer in template.layers)
    layers = []
    for value in setting.alternatives:
        text = _text(value)
        if text not in LAYERS:
            errors.error("E0203", f"unknown layer '{text}'", value.span,
                         did_you_mean(text, LAYERS) or "layers are config, runtime and image")
            return None
        if text not in template.layers:
            errors.error("E0402", f"fault template '{template.name}' has no {text} layer", value.span,
                         f"it supports: {', '.join(sorted(template.layers))}")
            return None
        if text in layers:
            errors.error("E0208", f"layer '{text}' is listed twice", value.span)
            return None
        layers.append(text)
    return tuple(layers)


def _onset(onset: ast.Onset, ctx: ExprContext):
    errors = ctx.collector
    quantities = [q for q in (onset.after, onset.every, onset.offset, onset.duration) if q is not None]
    for q in quantities:
        if q.quantity.dimension != Dimension.duration:
            errors.error("E0302", f"onset times are durations, not '{q.quantity.text}'", q.span, "e.g. 40s")
            return None
    if onset.kind == "at_start":
        return Onset(kind="at_start")
    if onset.kind == "after":
        assert onset.after is not None  # the grammar: `after <duration>`
        return Onset(kind="after", after_s=onset.after.quantity.value)
    if onset.kind == "every":
        # the grammar: `every <d> offset <d> for <d>`
        assert onset.every is not None and onset.offset is not None and onset.duration is not None
        example = "e.g. every 60s offset 20s for 10s"
        if not (_positive(onset.every, "a periodic onset's period", errors, example)
                and _positive(onset.duration, "a periodic onset's duration", errors, example)):
            return None
        every, offset, duration = (q.quantity.value for q in (onset.every, onset.offset, onset.duration))
        if duration >= every or offset >= every:
            errors.error("E0505", "a periodic onset's offset and duration must be shorter than its period",
                         onset.span)
            return None
        return Onset(kind="every", every_s=every, offset_s=offset, duration_s=duration)
    assert onset.when is not None  # the grammar: `when <predicate>`
    predicate = lower_predicate(onset.when, ctx)
    return Onset(kind="when", when=predicate) if predicate else None


# ---- access and oracle --------------------------------------------------------------------


def _access_choice(task: ast.TaskDecl, namespace: Namespace, errors: Collector,
                   spans: SourceMap) -> list[AccessSurface]:
    choices = [s for s in task.statements if isinstance(s, ast.AccessChoice)]
    if not choices:
        errors.error("E0206", f"task '{task.name.text}' has no access surface", task.name.span,
                     f"add e.g. `access = {' | '.join(sorted(namespace.access)[:3])}`")
        return []
    for extra in choices[1:]:
        errors.error("E0208", "access is given twice", extra.span)
    surfaces: list[AccessSurface] = []
    for value in choices[0].alternatives:
        name = _text(value)
        short = name.split(".")[-1]
        if short in namespace.broken:
            continue
        if not isinstance(value, ast.Ref) or short not in namespace.access:
            errors.error("E0202", f"unknown access surface '{name}'", value.span, did_you_mean(short, namespace.access))
            continue
        if any(s.name == short for s in surfaces):
            errors.error("E0208", f"access surface '{short}' is listed twice", value.span)
            continue
        spans.access[short] = value.span
        surfaces.append(namespace.access[short])
    return surfaces


def _oracle(task: ast.TaskDecl, fault_decls: list[ast.FaultDecl], faults: set[str], decoys: set[str],
            errors: Collector, spans: SourceMap) -> list[OracleStep]:
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
                _positive(step.duration, "the wait until healthy", errors, "e.g. within 60s")
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
                _positive(step.duration, "a wait", errors, "e.g. wait 10s, or leave the step out")
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
