"""`runs(JOB)`: the runs a periodic job of the substrate (the descriptor's `jobs`: spine's
maintenance) completed in the predicate's window, a count, so "maintenance keeps running" is a gate;
a job the descriptor does not have, a missing job, a baseline figure or a quantity bound are errors
at the author's text."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import GOLDEN_MINIMAL, compile_text, spanned

GATE = "  gate outcome = standard_outcome(route: send)\n"


def _with(predicate: str) -> str:
    return GOLDEN_MINIMAL.replace(GATE, GATE.replace("= standard_outcome(route: send)",
                                                     "{\n    use standard_outcome(route: send)\n"
                                                     f"    {predicate}\n  }}"))


def _errors(text: str):
    with pytest.raises(DiagnosticError) as caught:
        compile_text(text)
    return caught.value.diagnostics


def test_runs_of_a_job_lowers_to_a_count_over_the_soak():
    task = compile_text(_with("runs(maintenance) >= 2")).tasks[0]
    predicate = task.lowered.spec.gates.outcome[-1]
    assert predicate.text == "runs(maintenance) >= 2"
    assert predicate.left.model_dump() == {"kind": "metric", "name": "runs", "route": None, "phase": None,
                                           "queue": None, "sequence": None, "baseline": False, "job": "maintenance"}
    # a metric without a job serialises as before `job` existed
    assert "job" not in task.lowered.spec.gates.outcome[0].left.model_dump()


@pytest.mark.parametrize("predicate, code, at, message, hint", [
    ("runs(maintenace) >= 2", "E0203", "maintenace", "unknown job 'maintenace'", "did you mean 'maintenance'?"),
    ("runs >= 2", "E0206", "runs", "runs needs a periodic job, e.g. runs(maintenance)", None),
    ("runs(send) >= 2", "E0203", "send", "unknown job 'send'", None),
    ("runs(maintenance, phase: peak) >= 2", "E0205", "phase: peak", "runs takes no argument 'phase'",
     "it takes: job"),
    ("runs(maintenance) >= baseline.runs(maintenance)", "E0204", "baseline.runs", "the baseline has no runs figure",
     "the calibrated baseline records the routes' latency, error rate and goodput"),
    ("runs(maintenance) >= 2s", "E0301", None, None, None),
])
def test_a_misused_runs_is_reported_at_the_authors_text(predicate, code, at, message, hint):
    text = _with(predicate)
    [error] = _errors(text)
    assert error.code == code, error
    if at is not None:
        assert spanned(text, error.span) == at
    if message is not None:
        assert error.message == message
    if hint is not None:
        assert error.hint == hint
