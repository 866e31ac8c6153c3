"""A mistake in a gate macro's own text is reported once with its number of uses
(arenac.lower.macro_repeats); a mistake in what each use passes stays at each use."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import MINIMAL, compile_text

MACRO = """macro route_ok(route) {
  error_rate(route) <= 1%
  p99(BODY_ROUTE, phase: peak) <= 500ms
}
"""


def _errors(body_route: str, uses: list[str]):
    outcome = "  gate outcome {\n" + "".join(f"    use route_ok(route: {r})\n" for r in uses) + "  }\n"
    text = MACRO.replace("BODY_ROUTE", body_route) + MINIMAL.replace(
        "  gate outcome = standard_outcome(route: send)\n", outcome)
    with pytest.raises(DiagnosticError) as caught:
        compile_text(text)
    return caught.value.diagnostics


def test_a_mistake_in_the_macro_text_is_reported_once_with_the_number_of_uses():
    [error] = _errors("sned", ["send", "read", "unread"])
    assert error.message == "unknown route 'sned' (3 uses of route_ok)"
    assert error.span.line == 3  # in the macro's text


def test_a_macro_used_once_gets_no_count():
    [error] = _errors("sned", ["send"])
    assert error.message == "unknown route 'sned'"


def test_a_mistake_in_what_each_use_passes_is_reported_at_each_use():
    errors = _errors("route", ["sned", "raed"])
    # each bad argument, named twice by the body (error_rate and p99), is reported once at its use
    assert [(e.span.line, e.message) for e in errors] == [(12, "unknown route 'sned'"), (13, "unknown route 'raed'")]
