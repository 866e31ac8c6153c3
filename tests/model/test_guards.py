"""model/guards.py's `evaluate`: sums with factors, names, missing and unknown readings, and
Kleene's `and`/`or` (an unknown part decides nothing the others decide)."""

from __future__ import annotations

import pytest

from arenac.model.actions import Target
from arenac.model.guards import (
    MISSING,
    UNKNOWN,
    GuardAbsent,
    GuardAll,
    GuardAny,
    GuardCompare,
    KeyTerm,
    as_number,
    evaluate,
    targets_of,
)

A, B = Target(kind="config", ref="m.A_MS"), Target(kind="config", ref="m.B_S")


def reader(**values):
    return lambda target: values.get(target.ref.split(".")[1], MISSING)


SUM = GuardCompare(left=(KeyTerm(target=A), KeyTerm(target=B, factor=1000.0)), op="<=", value=5000.0)


@pytest.mark.parametrize("a, b, holds", [("500", "4", True), ("500ms", 4, True), ("1001", "4", False),
                                         ("lots", "4", False)])
def test_a_sum_in_the_comparisons_unit(a, b, holds):
    assert evaluate(SUM, reader(A_MS=a, B_S=b)) is holds


def test_float_noise_does_not_decide_an_equality():
    tenths = GuardCompare(left=(KeyTerm(target=A, factor=0.1), KeyTerm(target=B, factor=0.2)), op="==", value=0.3)
    assert evaluate(tenths, reader(A_MS="1", B_S="1")) is True


def test_a_key_against_a_key_and_names():
    key = GuardCompare(left=(KeyTerm(target=A),), op="==", right=(KeyTerm(target=B),), value=None)
    assert evaluate(key, reader(A_MS="x", B_S="x")) is True and evaluate(key, reader(A_MS="x", B_S="y")) is False
    name = GuardCompare(left=(KeyTerm(target=A),), op="!=", value="racy")
    assert evaluate(name, reader(A_MS="atomic")) is True and evaluate(name, reader(A_MS="racy")) is False


def test_missing_fails_a_comparison_and_satisfies_absent():
    assert evaluate(SUM, reader(A_MS="1")) is False
    assert evaluate(GuardAbsent(target=B), reader(A_MS="1")) is True
    assert evaluate(GuardAbsent(target=A), reader(A_MS="1")) is False
    assert evaluate(GuardAny(parts=(SUM, GuardAbsent(target=B))), reader(A_MS="1")) is True


def test_unknown_decides_only_what_the_other_parts_leave_open():
    unknown = lambda target: UNKNOWN if target == B else "1"  # noqa: E731
    only_a = GuardCompare(left=(KeyTerm(target=A),), op="<=", value=2.0)
    false_a = GuardCompare(left=(KeyTerm(target=A),), op=">=", value=2.0)
    assert evaluate(SUM, unknown) is None and evaluate(GuardAbsent(target=B), unknown) is None
    assert evaluate(GuardAny(parts=(SUM, only_a)), unknown) is True
    assert evaluate(GuardAny(parts=(SUM, false_a)), unknown) is None
    assert evaluate(GuardAll(parts=(SUM, false_a)), unknown) is False
    assert evaluate(GuardAll(parts=(SUM, only_a)), unknown) is None


def test_targets_of_lists_each_once_in_order():
    assert targets_of(GuardAny(parts=(SUM, GuardAbsent(target=A)))) == (A, B)


def test_as_number():
    assert as_number("16") == 16 and as_number("350ms") == pytest.approx(0.35) and as_number(3) == 3
    assert as_number(True) is None and as_number("lots") is None and as_number(None) is None
