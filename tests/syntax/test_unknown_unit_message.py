"""A quantity in a unit the language lacks (`512mb`) is a diagnostic naming the unit and the
units of its dimension (E0302) at the whole quantity; other unreadable characters keep E0102."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from arenac.syntax.parser import parse


def _error(line: str):
    with pytest.raises(DiagnosticError) as caught:
        parse(SourceFile("t.arena", f"task t {{\n  {line}\n}}\n"))
    [error] = caught.value.diagnostics
    return error


def test_an_unknown_unit_names_the_units_of_its_dimension_at_the_quantity():
    error = _error("fault m = spine.redis_maxmemory(size: 512mb)")
    assert (error.code, error.message) == ("E0302", "unknown unit 'mb' in 512mb")
    assert error.hint == "sizes are Ki, Mi, Gi, e.g. 512Mi"
    assert (error.span.line, error.span.column, error.span.end_column) == (2, 41, 46)


def test_a_known_unit_parses():
    parse(SourceFile("t.arena", "task t {\n  fault m = spine.redis_maxmemory(size: 512Mi)\n}\n"))


def test_another_unreadable_character_is_still_unexpected():
    error = _error('title = "x" @')
    assert (error.code, error.message) == ("E0102", "unexpected character '@'")
