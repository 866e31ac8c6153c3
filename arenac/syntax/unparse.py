"""Canonical text of expressions and values, for messages, gates-as-data and `fmt`."""

from __future__ import annotations

from arenac.syntax import ast


def value_text(value: ast.Value | ast.Expr) -> str:
    if isinstance(value, ast.StringLit):
        return '"' + value.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, ast.NumberLit):
        return _number(value.value)
    if isinstance(value, ast.QuantityLit):
        return value.quantity.text
    if isinstance(value, ast.Ref):
        return value.text
    if isinstance(value, ast.Call):
        return call_text(value)
    if isinstance(value, ast.Binary):
        return f"{value_text(value.left)} {value.op} {value_text(value.right)}"
    raise TypeError(f"not a value: {value!r}")


def call_text(call: ast.Call) -> str:
    args = []
    for arg in call.args:
        alternatives = " | ".join(value_text(v) for v in arg.alternatives)
        args.append(f"{arg.name.text}: {alternatives}" if arg.name else alternatives)
    return f"{call.func.text}({', '.join(args)})"


def comparison_text(comparison: ast.Comparison) -> str:
    return f"{value_text(comparison.left)} {comparison.op} {value_text(comparison.right)}"


def _number(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)
