"""Grading reads the baseline of the task's own load profile: the figures of evidence/baseline.json
when it is that profile's calibration, an EvidenceError (infra_error, never a verdict) when it is
another profile's or when the profile was never calibrated and a gate reads a baseline figure; and
copy_grading_inputs copies the bundle's own profile's calibration, or none."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from arenac.runner.harness_adapters import copy_grading_inputs
from arenac.verify import EvidenceError
from verify.recorded import LIBRARY_BASELINE, ROOT, RecordedRun, binop, const, metric, pred

# p99(send) <= 1.5 * baseline.p99(send, phase: peak): the recorded sends take 4 ms
SEND_P99 = pred("p99(send) <= 1.5 * baseline.p99(send, phase: peak)", metric("p99", "send"), "<=",
                binop(const(1.5), "*", metric("p99", "send", "peak", baseline=True)))


def deletes_calibration(base: dict, send_peak_p99_ms: float) -> dict:
    """A calibration of spine.standard_deletes whose send figure differs from the standard's."""
    other = copy.deepcopy(base)
    other["profile"]["name"] = "spine.standard_deletes"
    other["routes"]["send"]["peak"]["p99_ms"] = send_peak_p99_ms
    other["routes"]["delete"] = {"peak": copy.deepcopy(other["routes"]["send"]["peak"])}
    return other


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    recorded = RecordedRun(tmp_path)
    recorded.outcome = [SEND_P99]
    return recorded


def test_a_task_on_a_calibrated_profile_reads_its_own_profiles_figures(run):
    assert run.baseline["routes"]["send"]["peak"]["p99_ms"] == 6.0  # the standard's: 4 ms <= 9 ms holds
    assert run.grade().outcome is True
    # the same evidence on spine.standard_deletes, whose calibration says 2 ms: 4 ms > 3 ms fails
    run.load = "spine/standard_deletes"
    run.baseline = deletes_calibration(run.baseline, send_peak_p99_ms=2.0)
    verdict = run.grade()
    assert verdict.gates is not None
    [check] = verdict.gates.outcome.checks
    assert (verdict.status, verdict.outcome, check.passed) == ("scored", False, False)
    assert check.terms["baseline.p99(send, phase: peak)"] == pytest.approx(0.002)


def test_another_profiles_figures_are_refused_not_graded(run):
    run.load = "spine/standard_deletes"  # the evidence holds spine.standard's calibration
    with pytest.raises(EvidenceError, match=re.escape(
            "evidence/baseline.json: the calibration of load profile spine.standard, not of the task's "
            "spine.standard_deletes")):
        run.grade()


def test_an_uncalibrated_profile_is_refused_at_grading_when_a_gate_reads_the_baseline(run):
    run.load, run.baseline_copied = "spine/standard_deletes", False
    with pytest.raises(EvidenceError, match=re.escape(
            "evidence/baseline.json: missing: load profile spine.standard_deletes has no calibrated baseline")):
        run.grade()


def test_an_uncalibrated_profile_grades_gates_that_read_no_baseline(run):
    run.load, run.baseline_copied = "spine/standard_deletes", False
    run.outcome = [pred("error_rate(send) <= 1%", metric("error_rate", "send"), "<=", const(0.01, "fraction"))]
    assert run.grade().outcome is True


def _bundle(load: str) -> SimpleNamespace:
    plan = SimpleNamespace(substrate="spine", load=SimpleNamespace(name=load))
    return SimpleNamespace(gates_bytes=b"{}\n", plan=plan)


def test_copy_grading_inputs_copies_the_bundles_own_profiles_calibration(tmp_path: Path):
    copy_grading_inputs(_bundle("standard"), tmp_path)
    assert (tmp_path / "baseline.json").read_bytes() == LIBRARY_BASELINE.read_bytes()
    assert (tmp_path / "gates.json").read_bytes() == b"{}\n"


def test_copy_grading_inputs_copies_no_other_profiles_calibration(tmp_path: Path):
    assert not (ROOT / "library/substrates/spine/baselines/light.json").exists()
    (tmp_path / "baseline.json").write_text("stale")  # a re-run's left-over is not kept either
    copy_grading_inputs(_bundle("light"), tmp_path)
    assert not (tmp_path / "baseline.json").exists()
