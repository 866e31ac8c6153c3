"""Verdict details speak the spec's units: a fraction in percent, a latency in milliseconds (seconds
from ten seconds on), a rate per second; an expression takes the dimension of its first side that
has one. Checked both on the functions and on a graded predicate's detail."""

from __future__ import annotations

import pytest

from arenac.core.units import Dimension
from arenac.model.gates import BinOp, Const, Metric
from arenac.verify.spelled import dimension_of, spelled
from verify.recorded import ERROR_RATE_SEND, RecordedRun


@pytest.mark.parametrize("value, dimension, text", [
    (0.0070922, Dimension.fraction, "0.7092%"), (0.01, Dimension.fraction, "1%"), (0.0, Dimension.fraction, "0%"),
    (2.15859, Dimension.duration, "2159 ms"), (0.0049, Dimension.duration, "4.9 ms"),
    (12.5, Dimension.duration, "12.5 s"), (37.4167, Dimension.rate, "37.42/s"), (503.0, Dimension.number, "503"),
])
def test_values_are_spelled_in_their_dimension(value, dimension, text):
    assert spelled(value, dimension) == text


def test_an_expression_takes_its_first_dimension_that_is_not_a_plain_number():
    p99 = Metric(name="p99", route="send", phase="peak", baseline=True)
    scaled = BinOp(left=BinOp(left=Const(value=1.5, dimension="number"), op="*", right=p99), op="+",
                   right=Const(value=0.15, dimension="duration"))
    assert dimension_of(scaled) is Dimension.duration
    assert dimension_of(Metric(name="goodput")) is Dimension.rate
    assert dimension_of(Const(value=3.0, dimension="number")) is Dimension.number


def test_a_graded_predicate_reads_in_percent(tmp_path):
    run = RecordedRun(tmp_path)
    run.outcome = [ERROR_RATE_SEND]
    (check,) = run.grade().gates.outcome.checks
    assert check.detail.startswith("0% <= 1% holds; error_rate(send) = 0% ("), check.detail
    assert check.observed == 0.0 and check.threshold == 0.01  # the numbers stay in base units
