"""A baseline per load profile (library/substrates/spine/baselines/PROFILE.json): E0218 checks the
routes of the task's own profile's calibration, refuses every baseline figure of a profile never
calibrated (and says nothing when the task reads none), and the loader refuses a file holding
another profile's calibration."""

from __future__ import annotations

import json
import shutil

import pytest

import arenac.lower.library as library_files
from arenac.core.diagnostics import DiagnosticError
from helpers.specs import compile_text

SPEC = """task t {
  title = "Deleting messages fails"
  substrate = spine
  load = spine.standard_deletes
  instruction = "Deleting messages fails. Fix it, then declare."
  fault grant = spine.revoked_grant(table: messages, privilege: DELETE) {
    layer = runtime
    onset = after 30s
  }
  access = confined
  gate outcome {
    BOUND
  }
  gate safety {
    changes only grant(messages, DELETE)
  }
}
"""


def _spec(bound: str) -> str:
    return SPEC.replace("BOUND", bound)


def _errors(text: str):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    return raised.value.diagnostics


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A copy of the library, the one every compile of the test loads."""
    root = tmp_path / "library"
    shutil.copytree(library_files.library_root(), root, ignore=shutil.ignore_patterns("__pycache__", "app"))
    monkeypatch.setattr(library_files, "library_root", lambda: root)
    return root


def _calibrate_deletes(root, routes=("send", "delete")) -> None:
    """A calibration of spine.standard_deletes (the standard's figures under its name, for the routes given)."""
    baselines = root / "substrates/spine/baselines"
    record = json.loads((baselines / "standard.json").read_text())
    record["profile"]["name"] = "spine.standard_deletes"
    record["routes"] = {route: record["routes"]["send"] for route in ("all", *routes)}
    (baselines / "standard_deletes.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def test_a_calibrated_profile_gives_its_own_routes_figures(library):
    _calibrate_deletes(library)
    compile_text(_spec("p99(delete, phase: peak) <= 1.5 * baseline.p99(delete, phase: peak)\n"
                       "    goodput >= 0.95 * baseline.goodput"))


def test_a_route_the_profiles_calibration_lacks_is_e0218(library):
    _calibrate_deletes(library, routes=("send",))
    text = _spec("p99(delete, phase: peak) <= 1.5 * baseline.p99(delete, phase: peak)")
    [error] = _errors(text)
    assert (error.code, error.message) == (
        "E0218", "the calibrated baseline of load profile 'spine.standard_deletes' has no figures for route 'delete'")
    line = text.split("\n")[error.span.line - 1]
    assert line[:error.span.column - 1].endswith("baseline.p99(")  # the baseline's `delete`
    assert "its calibration never requested 'delete'" in error.hint


def test_an_uncalibrated_profile_refuses_every_baseline_figure_where_it_is_written(library):
    (library / "substrates/spine/baselines/standard_deletes.json").unlink()  # as before its calibration
    text = _spec("goodput >= 0.95 * baseline.goodput")
    [error] = _errors(text)
    assert (error.code, error.message) == ("E0218", "load profile 'spine.standard_deletes' has no calibrated "
                                                    "baseline, so `baseline.goodput` has no figure")
    assert (error.span.line, error.span.column) == (12, 23)
    assert error.hint == ("calibrate it (`arenac calibrate --profile standard_deletes`), or compare with a bound "
                          "of your own, e.g. `goodput(...) <= ...`")


def test_an_uncalibrated_profile_says_nothing_when_the_task_reads_no_baseline(library):
    (library / "substrates/spine/baselines/standard_deletes.json").unlink()
    compilation = compile_text(_spec("error_rate(delete) <= 1%"))
    assert [w.code for task in compilation.tasks for w in task.warnings] == []


def test_the_standard_profiles_calibration_is_the_former_baseline_json(library):
    assert library_files.load_library().substrates["spine"].baselines.keys() == {"standard", "standard_deletes"}


def test_a_file_holding_another_profiles_calibration_is_refused(library):
    baselines = library / "substrates/spine/baselines"
    shutil.copy(baselines / "standard.json", baselines / "light.json")  # spine.standard's figures as light's
    with pytest.raises(DiagnosticError) as raised:
        library_files.load_library()
    [error] = raised.value.diagnostics
    assert error.code == "E0601"
    assert error.message == ("invalid library file library/substrates/spine/baselines/light.json: it is the "
                             "calibration of spine's profile 'spine.standard', not of spine.light")
