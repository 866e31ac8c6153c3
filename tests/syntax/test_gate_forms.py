"""One-line gates in the syntax: `gate NAME = MACRO(args)` parses as the block with one `use`,
and anything else after the `=` is a syntax diagnostic (E0118) that keeps the call's own messages."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from helpers.specs import BRACED, MINIMAL, compile_text, spanned


def test_a_one_line_gate_parses_as_the_block_with_one_use():
    from arenac.syntax import ast
    from arenac.syntax.parser import parse

    (task,) = parse(SourceFile("t.arena", MINIMAL)).tasks
    outcome, safety = (s for s in task.statements if isinstance(s, ast.GateDecl))
    assert outcome.short and safety.short
    (use,) = outcome.statements
    assert isinstance(use, ast.MacroUse) and use.call.func.text == "standard_outcome"
    assert (use.span.line, use.span.column, use.span.end_column) == (7, 18, 47)  # the call itself
    (braced,) = parse(SourceFile("t.arena", BRACED)).tasks
    assert not any(s.short for s in braced.statements if isinstance(s, ast.GateDecl))


@pytest.mark.parametrize("statement", [
    "error_rate(send) <= 1%",
    "goodput >= 0.95 * baseline.goodput within 60s",
    "use standard_outcome(route: send)",
    "survives restart(message)",
    "changes only config(message)",
    "guard config(message.DB_POOL_SIZE) <= 32",
    "protect table(messages)",
    "invariant sequence(messages.seq) dense unique",
    "goodput",
    "5",
    "standard_outcome(route: send) extra",
    "",
])
def test_a_one_line_gate_that_is_not_a_macro_call_is_a_syntax_diagnostic(statement):
    text = MINIMAL.replace("standard_outcome(route: send)", statement)
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0118" and diagnostic.span.line == 7
    assert "gate NAME = MACRO(args)" in diagnostic.message
    if statement in ("error_rate(send) <= 1%", "survives restart(message)"):
        assert spanned(text, diagnostic.span) == statement  # the whole statement, as in a block


def test_a_mistake_inside_the_call_keeps_the_call_messages():
    text = MINIMAL.replace("standard_outcome(route: send)", "standard_outcome(route: send x: 1)")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    assert [d.code for d in raised.value.diagnostics] == ["E0116"]
