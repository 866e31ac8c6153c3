"""The static gate checks (arenac.validate) judge the default oracle like a written one."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import MINIMAL, compile_text


def test_the_default_oracle_is_judged_like_a_written_one():
    """E0507 (protect), E0509 (changes only) and E0508 (guards in the end state) apply to the
    default oracle, reported at the fault it repairs."""
    text = MINIMAL.replace("  gate safety = standard_safety(service: message)\n", """  gate safety {
    changes only config(fanout)
    protect config(message.DB_POOL_SIZE)
    guard config(message.DB_POOL_SIZE) <= 4
  }
""")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    found = {(d.code, d.span.line, d.span.column) for d in raised.value.diagnostics}
    assert found == {("E0507", 5, 9), ("E0509", 5, 9), ("E0508", 11, 5)}
    assert all("the default oracle" in d.message for d in raised.value.diagnostics)
