"""The restart re-check starts on a load-cycle boundary (runner/episode.py `cycle_boundary_at_or_after`)."""

import pytest

from arenac.runner.episode import cycle_boundary_at_or_after


@pytest.mark.parametrize(("t", "expected"), [
    (10.0, 30.0),     # before the first cycle: the first boundary
    (30.0, 30.0),     # on a boundary: that one, no wait
    (30.5, 90.0),     # just past one: the next
    (89.999, 90.0),
    (150.0 + 1e-12, 150.0),  # a float a hair past a boundary is on it
    (151.0, 210.0),
])
def test_the_first_boundary_at_or_after(t, expected):
    assert cycle_boundary_at_or_after(t, first=30.0, cycle_s=60.0) == pytest.approx(expected)


def test_without_cycles_it_is_the_time_itself():
    assert cycle_boundary_at_or_after(42.0, first=None, cycle_s=60.0) == 42.0
    assert cycle_boundary_at_or_after(42.0, first=30.0, cycle_s=0.0) == 42.0
