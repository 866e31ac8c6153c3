"""The Wilson score interval (arenac/campaign/stats.py `wilson`): reference values and the
properties every interval has."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenac.campaign.stats import EstimateUndefined, wilson

Z2 = 1.959963984540054 ** 2


# Newcombe, R. G. (1998), "Two-sided confidence intervals for the single proportion: comparison of
# seven methods", Statistics in Medicine 17, 857-872, Table II, method 3 (the score interval without
# continuity correction), 95%, to the four decimals printed there.
@pytest.mark.parametrize(("passes", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_matches_newcombes_table(passes: int, n: int, low: float, high: float) -> None:
    interval = wilson(passes, n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_zero_half_and_all_of_ten() -> None:
    # 0/n and n/n have closed forms: [0, z²/(n+z²)] and [n/(n+z²), 1]; 5/10 is symmetric about 1/2
    # (0.2366 to 0.7634: the same score method, as the table above)
    assert wilson(0, 10).low == 0.0
    assert wilson(0, 10).high == pytest.approx(Z2 / (10 + Z2))
    assert round(wilson(0, 10).high, 4) == 0.2775
    assert wilson(10, 10).high == 1.0
    assert wilson(10, 10).low == pytest.approx(10 / (10 + Z2))
    half = wilson(5, 10)
    assert (round(half.low, 4), round(half.high, 4)) == (0.2366, 0.7634)
    assert half.low + half.high == pytest.approx(1.0)


@st.composite
def rates(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(min_value=1, max_value=500))
    return draw(st.integers(min_value=0, max_value=n)), n


@given(rates(), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]))
def test_bounds_lie_in_0_1_and_hold_the_rate(rate: tuple[int, int], confidence: float) -> None:
    passes, n = rate
    interval = wilson(passes, n, confidence)
    assert 0.0 <= interval.low <= passes / n <= interval.high <= 1.0
    assert interval.low < interval.high
    assert interval.confidence == confidence


@given(rates())
def test_a_higher_confidence_widens_it(rate: tuple[int, int]) -> None:
    passes, n = rate
    narrow, wide = wilson(passes, n, 0.8), wilson(passes, n, 0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high


def test_no_scored_trials_is_said_not_divided_by() -> None:
    with pytest.raises(EstimateUndefined, match="needs scored trials: there are none"):
        wilson(0, 0)


@pytest.mark.parametrize(("passes", "n", "confidence"), [(11, 10, 0.95), (-1, 10, 0.95), (1, 10, 1.0), (1, 10, 0.0)])
def test_impossible_arguments_are_refused(passes: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError, match=r"passes must be between|confidence must be strictly between"):
        wilson(passes, n, confidence)
