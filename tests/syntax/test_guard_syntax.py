"""The syntax of richer guards: `and` binds tighter than `or`, parentheses group (around a
condition or inside a sum), a run of one operator is one node, `absent(...)` takes a target or a
macro parameter; what is not a guard condition is a syntax error. `arenac fmt` spaces the new
forms canonically."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from arenac.syntax import ast
from arenac.syntax.fmt import format_source
from arenac.syntax.parser import parse


def condition(text: str) -> ast.GuardCondition:
    (task,) = parse(SourceFile("t.arena", f"task t {{\n  gate safety {{\n    guard {text}\n  }}\n}}\n")).tasks
    (gate,) = task.statements
    (guard,) = gate.statements
    assert isinstance(guard, ast.Guard)
    return guard.condition


def shape(node) -> object:
    if isinstance(node, ast.GuardBool):
        return (node.op, *(shape(p) for p in node.parts))
    if isinstance(node, ast.Absent):
        return "absent"
    assert isinstance(node, ast.Comparison)
    return node.op


def test_a_single_comparison_is_a_comparison():
    assert isinstance(condition("config(m.A) <= 3"), ast.Comparison)
    assert isinstance(condition("(config(m.A) <= 3)"), ast.Comparison)


def test_and_binds_tighter_than_or():
    assert shape(condition("a == 0 or b >= 1 and c < 2")) == ("or", "==", ("and", ">=", "<"))
    assert shape(condition("a == 0 and b >= 1 or c < 2")) == ("or", ("and", "==", ">="), "<")


def test_parentheses_group_conditions_and_sums():
    assert shape(condition("(a == 0 or b >= 1) and c < 2")) == ("and", ("or", "==", ">="), "<")
    sum_in_parens = condition("(config(m.A) + config(m.B)) * 1 <= 4 or absent(config(m.A))")
    assert shape(sum_in_parens) == ("or", "<=", "absent")


def test_a_run_of_one_operator_is_one_node():
    assert shape(condition("a == 0 or b == 1 or c == 2 or absent(d)")) == ("or", "==", "==", "==", "absent")


def test_absent_takes_a_target_or_a_macro_parameter():
    absent = condition("absent(config(m.A)) or a > 1").parts[0]
    assert isinstance(absent, ast.Absent) and isinstance(absent.target, ast.Call)
    assert isinstance(condition("absent(key) or a > 1").parts[0].target, ast.Ref)


@pytest.mark.parametrize("text", ["a == 0 or", "a or b == 1", "absent(1) or a > 1", "a == 0 and and b == 1",
                                  "(a == 0 or b == 1"])
def test_what_is_not_a_condition_is_a_syntax_error(text):
    with pytest.raises(DiagnosticError):
        condition(text)


def test_fmt_spaces_the_new_forms():
    messy = ("task t {\n  gate safety {\n"
             "    guard config(m.A)+config(m.B)<=32 or(config(m.A)==0 and absent( config(m.A) ))\n"
             "    guard(config(m.A) <= 3)or absent(key)\n  }\n}\n")
    canonical = ("task t {\n  gate safety {\n"
                 "    guard config(m.A) + config(m.B) <= 32 or (config(m.A) == 0 and absent(config(m.A)))\n"
                 "    guard (config(m.A) <= 3) or absent(key)\n  }\n}\n")
    assert format_source(messy) == canonical
    assert format_source(canonical) == canonical
