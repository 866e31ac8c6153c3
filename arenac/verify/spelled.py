"""Measured values in the units a spec writes them in, for verdict details.

Contract: `dimension_of(expr)` is an outcome expression's dimension: a metric's own (error_rate a
fraction, pNN a duration, goodput and throughput a rate, backlog and violations a count), a
constant's as the compiler recorded it, and for arithmetic the first side's that has one other
than a plain number (`1.5 * baseline.p99(send) + 150ms` is a duration). `spelled(value, dimension)`
writes a value as the spec would: a fraction in percent (`0.71%`), a duration in milliseconds
below ten seconds and in seconds above (`612 ms`, `12.5 s`), a rate per second (`37.4/s`), any
other number as it is (six significant digits). The verdict's `observed` and `threshold` stay in
base units (fractions, seconds): only the text for people changes.
"""

from __future__ import annotations

from arenac.core.units import Dimension
from arenac.model.gates import BinOp, Const, Expr, Metric

METRIC_DIMENSIONS: dict[str, Dimension] = {
    "error_rate": Dimension.fraction, "goodput": Dimension.rate, "throughput": Dimension.rate,
    "p50": Dimension.duration, "p90": Dimension.duration, "p95": Dimension.duration, "p99": Dimension.duration,
    "p999": Dimension.duration, "backlog": Dimension.number, "violations": Dimension.number,
    "runs": Dimension.number,
}


def dimension_of(expr: Expr) -> Dimension:
    if isinstance(expr, Metric):
        return METRIC_DIMENSIONS.get(expr.name, Dimension.number)
    if isinstance(expr, Const):
        return Dimension(expr.dimension) if expr.dimension in Dimension.__members__ else Dimension.number
    assert isinstance(expr, BinOp)
    left = dimension_of(expr.left)
    return left if left is not Dimension.number else dimension_of(expr.right)


def spelled(value: float, dimension: Dimension) -> str:
    if dimension is Dimension.fraction:
        return f"{value * 100:.4g}%"
    if dimension is Dimension.duration:
        return f"{value * 1000:.4g} ms" if abs(value) < 10 else f"{value:.4g} s"
    if dimension is Dimension.rate:
        return f"{value:.4g}/s"
    return f"{value:.6g}"
