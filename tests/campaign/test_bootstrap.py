"""The task bootstrap (arenac/campaign/stats.py `task_bootstrap`): deterministic under its seed,
an interval around the mean of the per-task values, and its refusals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenac.campaign.stats import EstimateUndefined, task_bootstrap

VALUES = [0.05, 0.17, 0.33, 0.41, 0.58, 0.66, 0.83, 0.97, 0.12, 0.71]  # many distinct resample means


def test_the_same_seed_gives_the_same_interval_and_another_seed_another() -> None:
    first = task_bootstrap(VALUES, resamples=2000, seed=7)
    assert task_bootstrap(VALUES, resamples=2000, seed=7) == first
    assert task_bootstrap(VALUES, resamples=2000, seed=8) != first


def test_the_default_is_10000_resamples_at_95_percent() -> None:
    interval = task_bootstrap(VALUES)
    assert interval.confidence == 0.95
    assert interval == task_bootstrap(VALUES, resamples=10_000, seed=0, confidence=0.95)
    assert interval != task_bootstrap(VALUES, resamples=100, seed=0, confidence=0.95)


# per-task pass rates as a campaign has them: c of n trials, for a few tasks
task_rates = st.lists(st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.integers(min_value=0, max_value=n).map(lambda c: c / n)), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(task_rates, st.integers(min_value=0, max_value=2**32))
def test_the_interval_holds_the_mean_and_lies_within_the_values(rates: list[float], seed: int) -> None:
    interval = task_bootstrap(rates, resamples=400, seed=seed)
    mean = math.fsum(rates) / len(rates)  # may round a last digit away from the module's (clamped) mean
    assert min(rates) <= interval.low <= mean + 1e-12 and mean - 1e-12 <= interval.high <= max(rates)


def test_one_task_gives_its_own_value_as_the_interval() -> None:
    interval = task_bootstrap([0.4], resamples=100)
    assert (interval.low, interval.high) == (0.4, 0.4)


def test_rounding_never_carries_the_interval_past_the_values() -> None:
    # fsum([0.2] * 3) / 3 is 0.20000000000000004: a pass rate above every task's
    interval = task_bootstrap([0.2, 0.2, 0.2], resamples=50)
    assert (interval.low, interval.high) == (0.2, 0.2)


def test_a_wider_confidence_gives_a_wider_interval_for_the_same_draws() -> None:
    narrow = task_bootstrap(VALUES, confidence=0.5)
    wide = task_bootstrap(VALUES, confidence=0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


def test_no_tasks_and_impossible_arguments_are_refused() -> None:
    with pytest.raises(EstimateUndefined, match="at least one task with scored trials"):
        task_bootstrap([])
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        task_bootstrap(VALUES, resamples=0)
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1"):
        task_bootstrap(VALUES, confidence=1.5)
