"""Lower gate expressions: metrics, baseline references and arithmetic, with units.

Every metric has a dimension (error rate: fraction, goodput: rate, percentiles:
duration, backlog, violations and runs: number); comparisons and sums must agree, and a
product may scale a quantity by a plain number only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.units import Dimension, format_quantity, parse_quantity
from arenac.model.gates import BinOp, Const, Metric, Predicate
from arenac.model.substrate import Substrate
from arenac.syntax import ast
from arenac.syntax.unparse import comparison_text, value_text

METRIC_DIMENSIONS: dict[str, Dimension] = {
    "error_rate": Dimension.fraction,
    "goodput": Dimension.rate,
    "throughput": Dimension.rate,
    "p50": Dimension.duration,
    "p90": Dimension.duration,
    "p95": Dimension.duration,
    "p99": Dimension.duration,
    "p999": Dimension.duration,
    "backlog": Dimension.number,
    "violations": Dimension.number,
    "runs": Dimension.number,
}
_ROUTE_METRICS = {"error_rate", "goodput", "throughput", "p50", "p90", "p95", "p99", "p999"}


@dataclass
class ExprContext:
    """What names an expression may use: the substrate, load phases, macro arguments."""

    substrate: Substrate
    phases: tuple[str, ...]
    collector: Collector
    bindings: dict[str, ast.Value] = field(default_factory=dict)
    # an unknown name's hint lists every known one: for library text, whose names came from an
    # author who sees only their own argument (lower/manifest_args.py)
    list_known: bool = False
    # what requests the task's load makes: the routes of its profile's mix (None: not known, no
    # check), the profile's name, and the profiles each route is in (the hint of E0217)
    mix: tuple[str, ...] | None = None
    load: str = ""
    profiles_with: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the routes the calibrated baseline of the task's load profile has figures for (E0218; None:
    # not known, no check), and whether that profile was calibrated at all (else every baseline
    # figure is refused: E0218)
    baseline_routes: tuple[str, ...] | None = None
    calibrated: bool = True

    def bind(self, node):
        """Replace a bare macro parameter by the value it was called with."""
        if isinstance(node, ast.Ref) and len(node.parts) == 1 and node.parts[0] in self.bindings:
            return self.bindings[node.parts[0]]
        return node


def lower_predicate(stmt: ast.Predicate | ast.Comparison, ctx: ExprContext) -> Predicate | None:
    comparison = stmt.comparison if isinstance(stmt, ast.Predicate) else stmt
    left = lower_expr(comparison.left, ctx)
    right = lower_expr(comparison.right, ctx)
    if left is None or right is None:
        return None
    (left_node, left_dim), (right_node, right_dim) = left, right
    if left_dim != right_dim:
        ctx.collector.error(
            "E0301",
            f"cannot compare {dimension_words(left_dim)} with {dimension_words(right_dim)}",
            comparison.span,
            _unit_hint(left_dim, right_dim),
        )
        return None
    if left_dim == Dimension.fraction and not _shares_in_range(comparison, left_node, right_node, ctx):
        return None
    window, window_s = "soak", None
    if isinstance(stmt, ast.Predicate) and stmt.window is not None:
        if stmt.window.quantity.dimension != Dimension.duration:
            ctx.collector.error("E0302", f"'{stmt.window_kind}' needs a duration, found '{stmt.window.quantity.text}'",
                                stmt.window.span, "e.g. within 60s")
            return None
        if stmt.window.quantity.value <= 0:
            example = "within 60s" if stmt.window_kind == "within" else "for 2m"
            ctx.collector.error("E0307", f"'{stmt.window_kind}' must be longer than 0s, not "
                                f"{stmt.window.quantity.text}", stmt.window.span,
                                f"e.g. {example}, or leave it out to require the predicate over the whole soak")
            return None
        assert stmt.window_kind is not None  # the grammar writes a window with its kind
        window, window_s = stmt.window_kind, stmt.window.quantity.value
    text = comparison_text(_substituted(comparison, ctx))
    if isinstance(stmt, ast.Predicate) and stmt.window is not None:
        text += f" {stmt.window_kind} {stmt.window.quantity.text}"
    return Predicate(text=text, left=left_node, op=comparison.op, right=right_node, window=window, window_s=window_s)


def lower_expr(node, ctx: ExprContext):
    """Return (expression, dimension), or None after reporting an error."""
    node = ctx.bind(node)
    if isinstance(node, ast.NumberLit):
        return Const(value=node.value, dimension="number"), Dimension.number
    if isinstance(node, ast.QuantityLit):
        q = node.quantity
        return Const(value=q.value, dimension=q.dimension.value), q.dimension
    if isinstance(node, ast.Binary):
        left, right = lower_expr(node.left, ctx), lower_expr(node.right, ctx)
        if left is None or right is None:
            return None
        (ln, ld), (rn, rd) = left, right
        if node.op == "*":
            if ld != Dimension.number and rd != Dimension.number:
                ctx.collector.error("E0303", f"cannot multiply {dimension_words(ld)} by {dimension_words(rd)}",
                                    node.span, "scale a quantity by a plain number, e.g. 1.2 * baseline.p99(send)")
                return None
            dim = rd if ld == Dimension.number else ld
        else:
            if ld != rd:
                ctx.collector.error("E0301", f"cannot add {dimension_words(ld)} and {dimension_words(rd)}", node.span,
                                    _unit_hint(ld, rd))
                return None
            dim = ld
        return BinOp(op=node.op, left=ln, right=rn), dim
    if isinstance(node, (ast.Ref, ast.Call)):
        return _lower_metric(node, ctx)
    shown = value_text(node) if isinstance(node, ast.StringLit) else f"'{value_text(node)}'"
    hint = None
    if isinstance(node, ast.StringLit):
        try:
            hint = f"drop the quotes: {parse_quantity(node.value.strip()).text}"
        except ValueError:
            hint = "a string is text; compare numbers, quantities such as 1% or 350ms, or metrics"
    ctx.collector.error("E0304", f"{shown} is not a number, quantity or metric", node.span, hint)
    return None


def _shares_in_range(comparison: ast.Comparison, left, right, ctx: ExprContext) -> bool:
    """A share of requests (error_rate) lies between 0% and 100%: a constant side outside that
    range makes the predicate always or never true, which is a typo (200% for 2%), not a gate."""
    for side, node in ((comparison.left, left), (comparison.right, right)):
        value = _constant(node)
        if value is not None and not 0 <= value <= 1:
            ctx.collector.error("E0308", f"a share of requests lies between 0% and 100%, not "
                                f"{format_quantity(value, Dimension.fraction)}", side.span,
                                "e.g. error_rate(send) <= 1%")
            return False
    return True


def _constant(node) -> float | None:
    """The value of an expression without metrics, or None."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, BinOp):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None:
            return None
        return {"+": left + right, "-": left - right, "*": left * right}.get(node.op)
    return None


def _lower_metric(node: ast.Ref | ast.Call, ctx: ExprContext):
    ref = node if isinstance(node, ast.Ref) else node.func
    parts = list(ref.parts)
    baseline = parts[0] == "baseline"
    if baseline:
        parts = parts[1:]
    name = ".".join(parts)
    if name not in METRIC_DIMENSIONS:
        ctx.collector.error("E0204", f"unknown metric '{name or ref.text}'", ref.span,
                            did_you_mean(name, METRIC_DIMENSIONS))
        return None
    if baseline and not ctx.calibrated:
        _uncalibrated(name, ref, ctx)
        return None
    fields: dict[str, str | None] = {}
    args = node.args if isinstance(node, ast.Call) else ()
    for position, arg in enumerate(args):
        value = ctx.bind(arg.alternatives[0])
        if len(arg.alternatives) != 1 or not isinstance(value, ast.Ref):
            ctx.collector.error("E0305", "metric arguments are plain names", arg.span)
            return None
        key = arg.name.text if arg.name else ("phase" if position > 0 else _subject_kind(name))
        if not _check_metric_arg(name, key, value, arg, ctx):
            return None
        if key == "route" and not _route_measured(name, value, baseline, ctx):
            return None
        fields[key] = value.text
    if name == "backlog" and "queue" not in fields:
        ctx.collector.error("E0206", "backlog needs a queue, e.g. backlog(fanout)", node.span)
        return None
    if name == "runs" and "job" not in fields:
        ctx.collector.error("E0206", "runs needs a periodic job, e.g. runs(maintenance)", node.span)
        return None
    if baseline and name in _SUBJECT_KINDS:
        ctx.collector.error("E0204", f"the baseline has no {name} figure", ref.span,
                            "the calibrated baseline records the routes' latency, error rate and goodput")
        return None
    if name == "violations" and "sequence" not in fields:
        ctx.collector.error("E0206", "violations needs a sequence, e.g. violations(messages.seq)", node.span)
        return None
    return Metric(name=name, baseline=baseline, **fields), METRIC_DIMENSIONS[name]


_SUBJECT_KINDS = {"backlog": "queue", "violations": "sequence", "runs": "job"}


def _subject_kind(metric: str) -> str:
    return _SUBJECT_KINDS.get(metric, "route")


def _check_metric_arg(metric: str, key: str, value: ast.Ref, arg: ast.Arg, ctx: ExprContext) -> bool:
    substrate = ctx.substrate
    allowed = {"route", "phase"} if metric in _ROUTE_METRICS else {_subject_kind(metric)}
    if key not in allowed:
        ctx.collector.error("E0205", f"{metric} takes no argument '{key}'", arg.span,
                            did_you_mean(key, allowed) or f"it takes: {', '.join(sorted(allowed))}")
        return False
    known = {
        "route": [r.name for r in substrate.routes],
        "phase": list(ctx.phases),
        "queue": [q.name for q in substrate.queues],
        "sequence": [s.name for s in substrate.sequences],
        "job": [j.name for j in substrate.jobs],
    }[key]
    if value.text not in known:
        hint = did_you_mean(value.text, known)
        if ctx.list_known:
            hint = " ".join(filter(None, (hint, f"the {key}s are {', '.join(known)}")))
        ctx.collector.error("E0203", f"unknown {key} '{value.text}'", value.span, hint)
        return False
    return True


def _route_measured(metric: str, value: ast.Ref, baseline: bool, ctx: ExprContext) -> bool:
    """A route metric reads requests of the route: the task's load must make some (E0217: else the
    metric is always undefined, so a gate on it fails and a manifestation never shows), and a
    baseline figure must have been calibrated (E0218: else it is always undefined too)."""
    route = value.text
    if baseline:
        if ctx.baseline_routes is None or route in ctx.baseline_routes:
            return True
        profile = f"{ctx.substrate.name}.{ctx.load}"
        instead = (f"write the gate macro's predicates out, comparing `{metric}({route})` with a bound of your own"
                   if ctx.bindings else f"compare with a bound of your own, e.g. `{metric}({route}) <= ...`")
        ctx.collector.error("E0218", f"the calibrated baseline of load profile '{profile}' has no figures for "
                            f"route '{route}'", value.span,
                            f"its calibration never requested '{route}': {instead}")
        return False
    if ctx.mix is None or route in ctx.mix:
        return True
    having = ctx.profiles_with.get(route, ())
    hint = (f"the load profiles that request it: {', '.join(having)} (`load = {ctx.substrate.name}.{having[0]}`)"
            if having else f"no load profile requests it: add `{route} = ...` to a profile's mix")
    ctx.collector.error("E0217", f"route '{route}' is not in the mix of load profile '{ctx.load}': no request of "
                        "the task's load would measure it", value.span, hint)
    return False


def _uncalibrated(metric: str, ref: ast.Ref, ctx: ExprContext) -> None:
    """E0218 for a baseline figure of a load profile that was never calibrated: it would be graded
    against no figures (never another profile's), so it could never hold."""
    instead = ("write the gate macro's predicates out with bounds of your own" if ctx.bindings
               else f"compare with a bound of your own, e.g. `{metric}(...) <= ...`")
    ctx.collector.error("E0218", f"load profile '{ctx.substrate.name}.{ctx.load}' has no calibrated baseline, so "
                        f"`{ref.text}` has no figure", ref.span,
                        f"calibrate it (`arenac calibrate --profile {ctx.load}`), or {instead}")


def _substituted(node, ctx: ExprContext):
    """The node with macro parameters replaced, for canonical text."""
    node = ctx.bind(node)
    if isinstance(node, ast.Comparison):
        return ast.Comparison(_substituted(node.left, ctx), node.op, _substituted(node.right, ctx), node.span)
    if isinstance(node, ast.Binary):
        return ast.Binary(node.op, _substituted(node.left, ctx), _substituted(node.right, ctx), node.span)
    if isinstance(node, ast.Call):
        args = tuple(
            ast.Arg(a.name, tuple(_substituted(v, ctx) for v in a.alternatives), a.span) for a in node.args
        )
        return ast.Call(node.func, args, node.span)
    return node


def dimension_words(dimension: Dimension) -> str:
    """How a message names a dimension: "a duration", "a plain number"..."""
    return {
        Dimension.number: "a plain number",
        Dimension.duration: "a duration",
        Dimension.fraction: "a percentage",
        Dimension.size: "a size",
        Dimension.rate: "a rate",
    }[dimension]


def _unit_hint(a: Dimension, b: Dimension) -> str | None:
    pair = {a, b}
    if pair == {Dimension.fraction, Dimension.number}:
        return "write rates of errors as percentages, e.g. 1%"
    if pair == {Dimension.duration, Dimension.number}:
        return "durations carry a unit, e.g. 350ms"
    if pair == {Dimension.rate, Dimension.number}:
        return "rates carry a unit, e.g. 40/s"
    return None


def require_positive(value: ast.QuantityLit, what: str, errors: Collector, hint: str = "e.g. 10m or 90s") -> bool:
    """Report (E0307) a duration that must be longer than zero and is not."""
    if value.quantity.value > 0:
        return True
    errors.error("E0307", f"{what} must be longer than 0s, not {value.quantity.text}", value.span, hint)
    return False
