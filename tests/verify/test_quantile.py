"""The count an upper latency gate is judged by: the binomial quantile against brute force, and
never less than what the window's own percentile allows."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenac.verify.quantile import allowed_over


def brute_force(n: int, share: Fraction, confidence: Fraction) -> int:
    """The least a with P(Binomial(n, share) <= a) >= confidence, in exact rationals."""
    cumulative = Fraction(0)
    for a in range(n + 1):
        cumulative += comb(n, a) * share**a * (1 - share) ** (n - a)
        if cumulative >= confidence:
            return a
    raise AssertionError("the probabilities sum to 1")


@given(n=st.integers(0, 120), permille=st.sampled_from([1, 10, 50, 100, 500]))
def test_the_quantile_is_the_binomials(n, permille):
    share = Fraction(permille, 1000)
    assert allowed_over(n, permille / 1000) == brute_force(n, share, Fraction(95, 100))


@given(n=st.integers(1, 5000), permille=st.sampled_from([1, 10, 50, 100, 500]))
def test_it_never_forbids_what_the_percentile_allows(n, permille):
    # hdrh's rank of a percentile: int(q * n + 0.5); the requests ranked above it may be over the bound
    quantile = 1 - permille / 1000
    ranked_above = n - int(quantile * n + 0.5)
    assert allowed_over(n, permille / 1000) >= ranked_above


def test_a_few_requests_over_pass_and_many_fail():
    # the soak's peaks at time scale 0.1: 162 sends; p99 allows 4 over, not 5
    assert allowed_over(162, 0.01) == 4
    assert allowed_over(70, 0.01) == 2
    assert allowed_over(0, 0.01) == 0


@pytest.mark.parametrize(("n", "share", "confidence"), [(-1, 0.01, 0.95), (10, 1.5, 0.95), (10, 0.01, 1.0)])
def test_bad_arguments_are_refused(n, share, confidence):
    with pytest.raises(ValueError):
        allowed_over(n, share, confidence)
