"""Outcome predicates: expressions of metrics and constants, compared over a window.

Contract:
- A predicate is evaluated over a base window (the soak, or a challenge's re-check window):
  `soak` -> the base window; `within X` -> [start + X, end) (the first X seconds are
  allowed for recovery; a base window no longer than X leaves nothing, so the predicate is
  undefined); `for X` -> the last X seconds, [max(start, end - X), end).
- Arithmetic (`+ - *`) over undefined operands is undefined, and an undefined side fails
  the predicate. `==` and `!=` compare with a relative tolerance of 1e-9 so that float
  arithmetic (`1.2 * baseline.p99`) cannot decide a verdict.
- An upper latency gate, a bare percentile of the window's own requests bounded from above
  (`p99(send, phase: peak) <= 159ms`, or `<`), is judged by count: it fails only when more of the
  window's requests lie over the bound than a true percentile at the bound gives at 95% confidence
  (arenac/verify/quantile.py). Its percentile is still its observed value, and its detail says when
  the count forgave one over the bound. Every other predicate (a percentile bounded from below, as a
  fault's manifestation is; a sum of percentiles; a baseline figure) compares values.
"""

from __future__ import annotations

import math

from arenac.core.units import Dimension, format_seconds
from arenac.model.gates import BinOp, Const, Expr, Metric, Predicate
from arenac.model.verdict import Check, Window
from arenac.verify.metrics import PERCENTILES, Measured, Measurer, metric_text
from arenac.verify.quantile import CONFIDENCE, allowed_over
from arenac.verify.spelled import dimension_of, spelled


def predicate_window(predicate: Predicate, base: Window) -> Window:
    if predicate.window == "within" and predicate.window_s is not None:
        return Window(label=f"{base.label} after {format_seconds(predicate.window_s)}",
                      start_s=base.start_s + predicate.window_s, end_s=base.end_s)
    if predicate.window == "for" and predicate.window_s is not None:
        return Window(label=f"last {format_seconds(predicate.window_s)} of {base.label}",
                      start_s=max(base.start_s, base.end_s - predicate.window_s), end_s=base.end_s)
    return base


def compare(left: float, op: str, right: float) -> bool:
    if op in ("==", "!="):
        equal = math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)
        return equal if op == "==" else not equal
    return {"<=": left <= right, ">=": left >= right, "<": left < right, ">": left > right}[op]


class _Evaluation:
    def __init__(self, measurer: Measurer, window: Window) -> None:
        self.measurer = measurer
        self.window = window
        self.terms: dict[str, float | None] = {}
        self.notes: list[str] = []

    def value(self, expr: Expr) -> float | None:
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, Metric):
            measured: Measured = self.measurer.measure(expr, self.window)
            text = metric_text(expr)
            self.terms[text] = measured.value
            shown = spelled(measured.value, dimension_of(expr)) if measured.value is not None else "undefined"
            note = f"{text} = {shown}"
            if measured.value is None or not expr.baseline:
                note += f" ({measured.note.removeprefix('undefined: ')})"
            self.notes.append(note)
            return measured.value
        assert isinstance(expr, BinOp)
        left, right = self.value(expr.left), self.value(expr.right)
        if left is None or right is None:
            return None
        return {"+": left + right, "-": left - right, "*": left * right}[expr.op]


def evaluate_predicate(predicate: Predicate, measurer: Measurer, base: Window) -> Check:
    window = predicate_window(predicate, base)
    evaluation = _Evaluation(measurer, window)
    left = evaluation.value(predicate.left)
    right = evaluation.value(predicate.right)
    notes = "; ".join(evaluation.notes)
    if window.end_s <= window.start_s:
        passed, verdict = False, "the window is empty"
    elif left is None or right is None:
        passed, verdict = False, "undefined"
    else:
        passed = compare(left, predicate.op, right)
        # in the predicate's own unit, the one the spec wrote its bound in
        dimension = dimension_of(predicate.left)
        if dimension is Dimension.number:
            dimension = dimension_of(predicate.right)
        verdict = (f"{spelled(left, dimension)} {predicate.op} {spelled(right, dimension)} "
                   f"{'holds' if passed else 'does not hold'}")
        if _upper_latency_gate(predicate):
            passed, verdict = _by_count(predicate, measurer, window, passed, verdict, right)
    return Check(kind="predicate", text=predicate.text, passed=passed, observed=left, threshold=right,
                 window=window, detail=f"{verdict}; {notes}" if notes else verdict, terms=evaluation.terms)


def _upper_latency_gate(predicate: Predicate) -> bool:
    left = predicate.left
    return (predicate.op in ("<=", "<") and isinstance(left, Metric) and not left.baseline
            and left.name in PERCENTILES)


def _by_count(predicate: Predicate, measurer: Measurer, window: Window, passed: bool, verdict: str,
              bound_s: float) -> tuple[bool, str]:
    """An upper latency gate's result and verdict judged by the requests over its bound."""
    if passed:  # by value, so by count too (quantile.py): the count is not worth a line
        return True, verdict
    metric = predicate.left
    assert isinstance(metric, Metric)
    over, count = measurer.over(metric, window, bound_s, strict=predicate.op == "<")
    over_share = 1.0 - PERCENTILES[metric.name] / 100.0
    allowed = allowed_over(count, over_share)
    bound = spelled(bound_s, Dimension.duration)
    counted = (f"{over} of {count} requests {'at or ' if predicate.op == '<' else ''}over {bound}, "
               f"where a {metric.name} of {bound} gives at most {allowed} in {CONFIDENCE:.0%} of windows of {count}")
    if over <= allowed:
        return True, f"{verdict} by value, but holds by count: {counted}"
    return False, f"{verdict}: {counted}"


def evaluate_predicates(predicates: tuple[Predicate, ...], measurer: Measurer, base: Window) -> tuple[Check, ...]:
    return tuple(evaluate_predicate(p, measurer, base) for p in predicates)
