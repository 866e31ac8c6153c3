"""pass@k and pass^k (arenac/campaign/stats.py) against brute force: over every k-subset of n
trials with c passes, the share of subsets holding a pass (pass@k) and made only of passes (pass^k)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenac.campaign.stats import EstimateUndefined, pass_at_k, pass_hat_k


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(min_value=1, max_value=8))
    return n, draw(st.integers(min_value=0, max_value=n)), draw(st.integers(min_value=1, max_value=n))


def _subsets(n: int, c: int, k: int) -> list[tuple[int, ...]]:
    outcomes = [1] * c + [0] * (n - c)
    return list(itertools.combinations(outcomes, k))


@given(counts())
def test_pass_at_k_is_the_share_of_k_subsets_holding_a_pass(case: tuple[int, int, int]) -> None:
    n, c, k = case
    subsets = _subsets(n, c, k)
    brute = Fraction(sum(any(subset) for subset in subsets), len(subsets))
    assert pass_at_k(n, c, k) == pytest.approx(float(brute), abs=1e-12)


@given(counts())
def test_pass_hat_k_is_the_share_of_k_subsets_made_only_of_passes(case: tuple[int, int, int]) -> None:
    n, c, k = case
    subsets = _subsets(n, c, k)
    brute = Fraction(sum(all(subset) for subset in subsets), len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(float(brute), abs=1e-12)


@given(counts())
def test_at_k_1_both_are_the_pass_rate(case: tuple[int, int, int]) -> None:
    n, c, _ = case
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n)


def test_the_stable_form_holds_where_the_binomials_are_huge() -> None:
    # C(2000, 100) overflows a float; the product form never forms it
    exact = 1 - Fraction(math.comb(1900, 100), math.comb(2000, 100))
    assert pass_at_k(2000, 100, 100) == pytest.approx(float(exact), rel=1e-9)
    assert pass_hat_k(2000, 1900, 100) == pytest.approx(float(Fraction(math.comb(1900, 100), math.comb(2000, 100))),
                                                        rel=1e-9)


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
def test_defined_from_n_equal_k_and_refused_below(estimator: Callable[[int, int, int], float]) -> None:
    assert estimator(3, 2, 3) in (0.0, 1.0)  # n == k: the one subset is all trials
    with pytest.raises(EstimateUndefined, match=r"needs at least k=3 scored trials, not n=2"):
        estimator(2, 1, 3)
    with pytest.raises(EstimateUndefined, match=r"not n=0"):
        estimator(0, 0, 1)


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_impossible_counts_are_refused(estimator: Callable[[int, int, int], float], n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"passes must be between|k must be at least 1") as error:
        estimator(n, c, k)
    assert not isinstance(error.value, EstimateUndefined)
