"""E0508 on richer guards: the static check holds a `GuardExpr` to the oracle's end state as it
holds a single guard, and lets pass what it cannot decide before a run (a non-config target)."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import compile_text, spec


def compiled(condition: str):
    return compile_text(spec().replace("    guard config(message.DB_POOL_SIZE) <= 32\n", f"    guard {condition}\n"))


POOL, OVERFLOW = "config(message.DB_POOL_SIZE)", "config(message.DB_POOL_OVERFLOW)"


def test_a_sum_the_end_state_keeps_passes():
    # the config-layer repair leaves 20 + 10, the runtime one 10 + 5
    assert compiled(f"{POOL} + {OVERFLOW} <= 30").tasks


def test_a_sum_the_end_state_breaks_is_e0508_with_the_values():
    with pytest.raises(DiagnosticError) as raised:
        compiled(f"{POOL} + {OVERFLOW} <= 29")
    (found,) = raised.value.diagnostics  # only the config-layer repair exceeds it, in both its variants
    assert found.code == "E0508"
    assert found.message.endswith(f"({POOL} = 20, {OVERFLOW} = 10) (in 2 variants)")


def test_an_alternative_the_end_state_satisfies_passes():
    assert compiled(f"{POOL} + {OVERFLOW} <= 15 or {POOL} >= 20").tasks


def test_what_cannot_be_known_before_a_run_passes_and_decides_nothing_else():
    assert compiled(f"{POOL} <= 5 or redis(maxmemory) >= 64Mi").tasks
    with pytest.raises(DiagnosticError) as raised:
        compiled(f"{POOL} <= 5 and redis(maxmemory) >= 64Mi")
    assert {d.code for d in raised.value.diagnostics} == {"E0508"}
