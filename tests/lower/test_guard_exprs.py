"""Lowering richer guards: a single comparison keeps its old `Guard`; sums, key against key,
`and`/`or` and `absent(...)` lower to a `GuardExpr` in the comparison's unit; each unit rule
passes the good form and reports the bad one at its term."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.model.gates import Guard, GuardExpr
from arenac.model.guards import GuardAbsent, GuardAll, GuardAny, GuardCompare, KeyTerm
from helpers.specs import compile_text, spec
from verify.recorded import target

POOL = "config(message.DB_POOL_SIZE)"
OVERFLOW = "config(message.DB_POOL_OVERFLOW)"
TIMEOUT = "config(message.DB_POOL_TIMEOUT_MS)"
MAINT = "config(maintenance.MAINT_DURATION_S)"


def guards(*lines: str):
    """The lowered safety checks of the shared spec with `lines` as its guards (macros allowed)."""
    text = spec().replace("    guard config(message.DB_POOL_SIZE) <= 32\n", "".join(f"    {g}\n" for g in lines))
    safety = compile_text(text).tasks[0].lowered.spec.gates.safety
    return [c for c in safety if isinstance(c, (Guard, GuardExpr))]


def codes(*lines: str) -> list[str]:
    text = spec().replace("    guard config(message.DB_POOL_SIZE) <= 32\n", "".join(f"    {g}\n" for g in lines))
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    return [d.code for d in raised.value.diagnostics]


def test_a_single_comparison_is_still_a_guard():
    (guard,) = guards(f"guard {POOL} <= 32")
    assert guard == Guard(text=f"{POOL} <= 32", target=target("config", "message.DB_POOL_SIZE"), op="<=", value=32)


def test_a_sum_against_a_bound():
    (guard,) = guards(f"guard {POOL} + {OVERFLOW} - 2 <= 32")
    pool, overflow = target("config", "message.DB_POOL_SIZE"), target("config", "message.DB_POOL_OVERFLOW")
    assert guard == GuardExpr(text=f"{POOL} + {OVERFLOW} - 2 <= 32", condition=GuardCompare(
        left=(KeyTerm(target=pool), KeyTerm(target=overflow)), op="<=", value=34.0))


def test_a_difference_in_parentheses_flips_the_signs_inside():
    (guard,) = guards(f"guard 40 - ({POOL} + {OVERFLOW}) >= 0")
    assert [t.factor for t in guard.condition.left] == [-1.0, -1.0] and guard.condition.value == -40.0
    assert guard.text == f"40 - {POOL} - {OVERFLOW} >= 0"


def test_durations_in_two_units_are_compared_in_the_smaller():
    (guard,) = guards(f"guard {TIMEOUT} + {MAINT} <= 10s")
    assert [t.factor for t in guard.condition.left] == [1.0, 1000.0] and guard.condition.value == 10000.0


def test_a_key_against_a_key():
    (guard,) = guards(f"guard {POOL} >= config(channel.DB_POOL_SIZE) - 2")
    condition = guard.condition
    assert [str(t.target) for t in condition.right] == ["config(channel.DB_POOL_SIZE)"] and condition.value == -2.0


def test_a_bound_on_the_left_is_a_guard_expr_with_the_key_on_the_right():
    (guard,) = guards(f"guard 32 >= {POOL}")
    pool = KeyTerm(target=target("config", "message.DB_POOL_SIZE"))
    assert guard.condition.left == () and guard.condition.right == (pool,)


def test_names_compare_key_with_key_or_with_a_name():
    key, name = guards("guard config(message.DB_ROLE) == config(channel.DB_ROLE) or absent(config(message.DB_ROLE))",
                       "guard atomic == config(message.SEQUENCER_MODE) and config(message.DB_ROLE) != postgres")
    compare = key.condition.parts[0]
    assert compare.value is None and str(compare.right[0].target) == "config(channel.DB_ROLE)"
    assert name.condition.parts[0].value == "atomic" and str(name.condition.parts[0].left[0].target) == \
        "config(message.SEQUENCER_MODE)"


def test_and_binds_tighter_than_or_and_parentheses_group():
    loose, grouped = guards(f"guard {POOL} == 0 or {POOL} >= 10 and {OVERFLOW} <= 10",
                            f"guard ({POOL} == 0 or {POOL} >= 10) and {OVERFLOW} <= 10")
    assert isinstance(loose.condition, GuardAny) and isinstance(loose.condition.parts[1], GuardAll)
    assert isinstance(grouped.condition, GuardAll) and isinstance(grouped.condition.parts[0], GuardAny)
    assert grouped.text == f"({POOL} == 0 or {POOL} >= 10) and {OVERFLOW} <= 10"
    assert loose.text == f"{POOL} == 0 or {POOL} >= 10 and {OVERFLOW} <= 10"


def test_absent_names_its_target():
    (guard,) = guards(f"guard {POOL} <= 32 or absent({POOL})")
    assert guard.condition.parts[1] == GuardAbsent(target=target("config", "message.DB_POOL_SIZE"))


def test_an_untyped_target_alone_keeps_base_units_or_its_name():
    (guard,) = guards(f"guard {POOL} <= 32 and redis(maxmemory) >= 64Mi")
    assert guard.condition.parts[1].value == 64 * 2**20
    (release,) = guards(f"guard release(message) != broken or {POOL} <= 32")
    assert release.condition.parts[0].value == "broken"
    assert codes(f"guard release(message) <= broken or {POOL} <= 32") == ["E0302"]


def test_a_macro_parameter_stands_for_its_key():
    text = spec().replace("    guard config(message.DB_POOL_SIZE) <= 32\n", f"    use budget({POOL})\n")
    text += "macro budget(key) {\n  guard key + config(message.DB_POOL_OVERFLOW) <= 40 or absent(key)\n}\n"
    safety = compile_text(text).tasks[0].lowered.spec.gates.safety
    (guard,) = [c for c in safety if isinstance(c, GuardExpr)]
    assert guard.text == f"{POOL} + {OVERFLOW} <= 40 or absent({POOL})"


@pytest.mark.parametrize("good, bad, code", [
    (f"{POOL} + {OVERFLOW} <= 32", f"{POOL} + {TIMEOUT} <= 32", "E0320"),
    (f"{TIMEOUT} + 2s <= 5s", f"{TIMEOUT} + 64Mi <= 5s", "E0320"),
    (f"{OVERFLOW} <= {POOL}", f"{TIMEOUT} <= {POOL}", "E0321"),
    ("config(message.DB_ROLE) == config(channel.DB_ROLE)", f"config(message.DB_ROLE) == {POOL}", "E0321"),
    (f"{POOL} + {OVERFLOW} <= 32", f"{POOL} + {OVERFLOW} <= 2s", "E0301"),
    ("config(message.SEQUENCER_MODE) == atomic", "config(message.SEQUENCER_MODE) + 1 == 2", "E0322"),
    (f"{POOL} + 2 <= 40", f"{POOL} * 2 <= 40", "E0323"),
    ("db_setting(spine.statement_timeout) <= 5s", f"db_setting(spine.statement_timeout) + {POOL} <= 5", "E0323"),
    (f"absent({POOL}) or {POOL} <= 32", f"absent({POOL}) and {POOL} <= 32", "E0324"),
    (f"{TIMEOUT} + {MAINT} <= 9s", f"{TIMEOUT} + {MAINT} <= 9000", "E0325"),
    (f"{TIMEOUT} + 500 <= 9000", f"{TIMEOUT} + {MAINT} + 500 <= 9s", "E0325"),
    ("config(message.SEQUENCER_MODE) != racy", "config(message.SEQUENCER_MODE) <= config(channel.DB_ROLE)", "E0302"),
])
def test_each_unit_rule_on_both_sides(good, bad, code):
    assert guards(f"guard {good} or {POOL} == 0")
    assert codes(f"guard {bad} or {POOL} == 0") == [code]
