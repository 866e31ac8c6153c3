"""unknown_unit_hint (arenac.core.units): a unit the language lacks is answered with the units
of the dimension it seems to mean, taken from UNITS, or with every unit when none fits."""

from __future__ import annotations

import pytest

from arenac.core.units import UNITS, Dimension, units_of, unknown_unit_hint


def test_units_of_a_dimension_come_from_the_one_list():
    for dimension in Dimension:
        assert units_of(dimension) == [u for u, (d, _) in UNITS.items() if d == dimension]
    assert units_of(Dimension.size) == ["Ki", "Mi", "Gi"]


@pytest.mark.parametrize("number, unit, hint", [
    ("512", "mb", "sizes are Ki, Mi, Gi, e.g. 512Mi"),
    ("1", "GB", "sizes are Ki, Mi, Gi, e.g. 1Gi"),
    ("64", "mi", "sizes are Ki, Mi, Gi, e.g. 64Mi"),  # the right unit in the wrong case
    ("2", "M", "sizes are Ki, Mi, Gi, e.g. 2Mi"),  # mega, not minutes (which is `m`)
    ("10", "sec", "durations are ms, s, m, h, e.g. 10s"),
    ("2", "min", "durations are ms, s, m, h, e.g. 2m"),
    ("5", "msec", "durations are ms, s, m, h, e.g. 5ms"),
    ("3", "days", "durations are ms, s, m, h"),
    ("5", "pct", "percentages are %"),
    ("40", "rps", "rates are /s"),
])
def test_a_lookalike_unit_hears_the_units_of_its_dimension(number, unit, hint):
    assert unknown_unit_hint(number, unit) == hint


def test_a_unit_of_no_known_dimension_hears_every_unit():
    hint = unknown_unit_hint("3", "x")
    assert hint == "units are ms, s, m, h (durations); % (percentages); Ki, Mi, Gi (sizes); /s (rates)"
    assert all(unit in hint for unit in UNITS)
