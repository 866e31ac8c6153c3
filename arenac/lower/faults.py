"""Lower a task's `fault` and `decoy` declarations against the substrate's fault templates.

Contract: `lower_faults` returns a `FaultSpec` per declaration that lowers cleanly and the names
declared, and records each fault's spans (name, onset, recur) in the task's `SourceMap`. Each
declaration is checked against its template: its arguments by the parameters' types and ranges
(E0205 unknown parameter, E0206 missing, E0302 type, E0308 range, E0203 an unknown service,
table, ...; E0215 a service without the admin event the template switches on, or a route that
event does not act on), its layers (E0203, E0402), its onset (durations, a periodic onset's shape, a `when`
predicate) and its recur delay; every problem goes into the context's collector. An argument that
breaks the template's manifestation predicate is reported at the argument (lower/manifest_args.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.source import Span
from arenac.core.units import Dimension, format_quantity
from arenac.lower.exprs import ExprContext, lower_predicate, require_positive
from arenac.lower.manifest_args import check_manifest_args
from arenac.lower.source_map import SourceMap
from arenac.lower.targets import PRIVILEGES
from arenac.model.library import LAYERS, FaultTemplate
from arenac.model.substrate import Substrate
from arenac.model.task import FaultSpec, Onset
from arenac.syntax import ast
from arenac.syntax.unparse import value_text

# the dimension of each quantity type of a template parameter (`arenac.variants` spells a cell's value in it)
PARAM_DIMENSIONS = {"int": Dimension.number, "duration": Dimension.duration, "size": Dimension.size,
                     "fraction": Dimension.fraction}


def lower_faults(task: ast.TaskDecl, templates: dict[str, FaultTemplate], substrate: str, ctx: ExprContext,
                 spans: SourceMap) -> tuple[list[FaultSpec], tuple[str, ...]]:
    """The task's faults and decoys (each checked against its template), and the names declared,
    in declaration order; a name declared twice is reported once more (E0208) and kept once."""
    errors = ctx.collector
    faults: list[FaultSpec] = []
    fault_decls = [s for s in task.statements if isinstance(s, ast.FaultDecl)]
    seen_faults: dict[str, None] = {}
    for decl in fault_decls:
        if decl.name.text in seen_faults:
            errors.error("E0208", f"fault '{decl.name.text}' is declared twice", decl.name.span)
            continue
        seen_faults[decl.name.text] = None
        spans.faults[decl.name.text] = decl.name.span
        spans.onsets[decl.name.text] = decl.onset.span if decl.onset else decl.name.span
        if decl.recur is not None:
            spans.recurs[decl.name.text] = decl.recur.span
        fault = _fault(decl, templates, substrate, ctx)
        if fault is not None:
            faults.append(fault)
    if not any(not decl.decoy for decl in fault_decls):
        errors.error("E0206", f"task '{task.name.text}' declares no fault" + (" (only decoys)" if fault_decls else ""),
                     task.name.span, "add e.g. `fault pool = spine.pool_size(service: message, size: 4)`")
    return faults, tuple(seen_faults)


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
    if args is None or layers is None or onset is None or not check_manifest_args(decl, template, args, ctx):
        return None
    return FaultSpec(name=decl.name.text, template=f"{substrate}.{template.name}", args=args, layers=layers,
                     onset=onset, recur_after_declare_s=recur, decoy=decl.decoy)


def _fault_args(decl: ast.FaultDecl, template: FaultTemplate, ctx: ExprContext):
    errors = ctx.collector
    params = {p.name: p for p in template.params}
    order = [p.name for p in template.params]
    values: dict[str, tuple] = {}
    spans: dict[str, tuple[Span, ...]] = {}
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
        spans[key] = tuple(v.span for v in arg.alternatives)
    for param in template.params:
        if param.name not in values and param.follows is None:
            if param.default is None:
                errors.error("E0206", f"fault template '{template.name}' needs '{param.name}'", decl.call.span,
                             f"add `{param.name}: ...`")
                ok = False
            else:
                values[param.name] = (param.default,)
    if ok:
        ok = _check_ties(decl, template, values, spans, ctx)
    return dict(sorted(values.items())) if ok else None


def _check_ties(decl: ast.FaultDecl, template: FaultTemplate, values: dict[str, tuple],
                spans: dict[str, tuple[Span, ...]], ctx: ExprContext) -> bool:
    """A `service` parameter with an `event` must name a service that has it, and a `route`
    parameter that `follows` it is a route that event acts on; one that follows a `privilege` is a
    route whose every request needs that privilege on the template's table. The route is derived
    when not written (into VALUES). Each problem is E0215 at the author's value (the call's when a
    default is at fault)."""
    errors, substrate = ctx.collector, ctx.substrate
    ok = True
    for param in template.params:
        if param.event is None:
            continue
        having = substrate.event_names.get(param.event, ())
        for index, service in enumerate(values[param.name]):
            if service not in having:
                span = spans[param.name][index] if param.name in spans else decl.call.span
                errors.error("E0215", f"service '{service}' has no admin event '{param.event}', which fault template "
                             f"'{template.name}' switches on", span,
                             f"the services that have it: {', '.join(having) or 'none'}")
                ok = False
    for param in template.params:
        if param.follows is None or not ok:
            continue
        tie = _Tie.of(template, param.follows, values, substrate)
        at = spans.get(tie.at, (decl.call.span,))[0]
        silent = [label for label, routes in tie.acted_on.items() if not routes]
        if silent:  # the descriptor's gap, named at the author's value
            errors.error("E0215", f"the descriptor names no route {tie.words(silent[0])}, which "
                         f"'{param.name}' of fault template '{template.name}' follows", at, tie.hint_silent)
            ok = False
            continue
        if param.name not in values:
            firsts = {routes[0] for routes in tie.acted_on.values()}
            if len(firsts) > 1:
                errors.error("E0215", f"{tie.plural} act on different routes ("
                             + "; ".join(f"{s}: {', '.join(r)}" for s, r in tie.acted_on.items())
                             + f"), so one '{param.name}' cannot follow them all", at, tie.hint_split)
                ok = False
                continue
            values[param.name] = (firsts.pop(),)
            continue
        for index, route in enumerate(values[param.name]):
            for label, routes in tie.acted_on.items():
                if route not in routes:
                    errors.error("E0215", f"route '{route}' is not one {tie.words(label)}", spans[param.name][index],
                                 f"{tie.verb}: {', '.join(routes)}; leave '{param.name}' out to follow "
                                 f"'{param.follows}'")
                    ok = False
    return ok


@dataclass(frozen=True)
class _Tie:
    """What a route parameter follows: each value of the followed parameter(s) (a label) and the
    routes it acts on, with the words of its diagnostics."""

    acted_on: dict[str, tuple[str, ...]]
    at: str  # the parameter whose written value a problem is reported at
    words_of: str  # "that {label}'s '{event}' acts on" / "whose requests need {label}"
    plural: str  # "the services' 'EVENT' events" / "the privileges"
    verb: str  # "it acts on" / "they need it"
    hint_silent: str | None
    hint_split: str

    def words(self, label: str) -> str:
        return self.words_of.format(label=label)

    @classmethod
    def of(cls, template: FaultTemplate, follows: str, values: dict[str, tuple], substrate: Substrate) -> _Tie:
        event = next(p.event for p in template.params if p.name == follows)
        if event is not None:
            acted_on = {service: _service_routes(substrate, service, event) for service in values[follows]}
            return cls(acted_on, follows, "that {label}'s '" + event + "' acts on",
                       f"the services' '{event}' events", "it acts on", None, "declare one fault per service")
        table = template.followed_table()
        acted_on = {f"{privilege} on {name}": substrate.routes_needing(name, str(privilege))
                    for name in values[table] for privilege in values[follows]}
        needing = sorted({item for route in substrate.routes for item in route.privileges})
        return cls(acted_on, follows, "whose requests need {label}", "the privileges", "the routes that need it",
                   "the privileges the descriptor's routes need: " + ", ".join(needing),
                   "declare one fault per privilege")


def _service_routes(substrate: Substrate, service: str, event: str) -> tuple[str, ...]:
    found = substrate.service(service)
    assert found is not None  # the service's name was checked against the descriptor
    return found.event_routes.get(event, ())


def _arg_value(value, param, ctx: ExprContext):
    errors = ctx.collector
    substrate = ctx.substrate
    if param.type in PARAM_DIMENSIONS:
        want = PARAM_DIMENSIONS[param.type]
        if isinstance(value, ast.NumberLit):
            got, number = Dimension.number, value.value
        elif isinstance(value, ast.QuantityLit):
            got, number = value.quantity.dimension, value.quantity.value
        else:
            errors.error("E0302", f"'{param.name}' is {_type_words(param.type)}, not '{value_text(value)}'", value.span)
            return None
        if got != want:
            errors.error("E0302", f"'{param.name}' is {_type_words(param.type)}, not '{value_text(value)}'", value.span,
                         _example(param.type))
            return None
        if param.type == "int" and not float(number).is_integer():
            errors.error("E0302", f"'{param.name}' is a whole number", value.span)
            return None
        if (param.min is not None and number < param.min) or (param.max is not None and number > param.max):
            errors.error("E0308", f"'{param.name}' = {value_text(value)} is out of range", value.span,
                         "allowed: " + _range_words(param.min, param.max, want)
                         + (f" ({param.why})" if param.why else ""))
            return None
        return int(number) if param.type == "int" else number
    if isinstance(value, ast.StringLit):
        text = value.value
    elif isinstance(value, ast.Ref):
        text = value.text
    else:
        errors.error("E0302", f"'{param.name}' is a name, not '{value_text(value)}'", value.span)
        return None
    known = {
        "service": [s.name for s in substrate.services],
        "table": [t.name for t in substrate.tables],
        "role": list(substrate.db_roles),
        "release": [r.name for r in substrate.releases],
        "event": list(substrate.event_names),
        "route": [r.name for r in substrate.routes],
        "privilege": list(PRIVILEGES),
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
        text = value_text(value)
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
    if onset.kind == "in_window":  # `after agent start [+ <duration>]`
        return Onset(kind="in_window", after_s=onset.after.quantity.value if onset.after is not None else 0.0)
    if onset.kind == "every":
        # the grammar: `every <d> offset <d> for <d>`
        assert onset.every is not None and onset.offset is not None and onset.duration is not None
        example = "e.g. every 60s offset 20s for 10s"
        if not (require_positive(onset.every, "a periodic onset's period", errors, example)
                and require_positive(onset.duration, "a periodic onset's duration", errors, example)):
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
