"""`arenac calibrate --profile NAME` (no stack: the calibration's runs are replaced by recorded
ones): it calibrates the named profile of the library, writes its record under that profile's name
(library/substrates/spine/baselines/NAME.json by default), and refuses a profile spine does not have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import arenac.substrate.calibrate as calibration
from arenac.cli.substrate import calibrate, calibration_profile, calibration_target
from arenac.lower.library import library_root
from arenac.model.baseline import Baseline
from arenac.substrate.calibrate import RunResult, Sample


def _recorded_run(routes: list[str]) -> RunResult:
    run = RunResult()
    run.phase_seconds.update({"warmup": 20.0, "peak": 60.0, "trough": 60.0})
    run.samples = [Sample(route, phase, 0.004, 200) for route in routes for phase in ("peak", "trough")]
    return run


@pytest.fixture
def calibrated(monkeypatch):
    """calibrate() with its live runs replaced: it aggregates one recorded run of the profile's routes
    and writes as it does after live runs; returns the profiles it was asked to calibrate."""
    asked: list[str] = []

    def run_once(profile, time_scale, spec, data_dir, seed):
        asked.append(profile.name)
        return _recorded_run(sorted(profile.mix))

    monkeypatch.setattr(calibration, "run_once", run_once)
    monkeypatch.setattr("arenac.cli.substrate.require_local", lambda command: None)
    return asked


def test_calibrate_writes_the_named_profiles_record(calibrated, tmp_path: Path):
    out = tmp_path / "standard_deletes.json"
    result = CliRunner().invoke(calibrate, ["--profile", "standard_deletes", "--runs", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert calibrated == ["standard_deletes"]
    record = Baseline.model_validate_json(out.read_bytes())
    assert record.profile_name == "spine.standard_deletes"
    assert "delete" in record.routes and record.routes["delete"]["peak"].p99_ms == 4.0
    assert out.read_text() == json.dumps(json.loads(out.read_text()), indent=2, sort_keys=True) + "\n"


def test_calibrate_defaults_to_the_standard_profile(calibrated, tmp_path: Path):
    out = tmp_path / "baseline.json"
    assert CliRunner().invoke(calibrate, ["--runs", "1", "--out", str(out)]).exit_code == 0
    assert calibrated == ["standard"]
    assert Baseline.model_validate_json(out.read_bytes()).profile_name == "spine.standard"


def test_the_default_target_is_the_profiles_own_file():
    for name in ("standard", "spine.standard_deletes"):
        profile = calibration_profile(name)
        bare = name.removeprefix("spine.")
        assert calibration_target(profile, None) == library_root() / "substrates/spine/baselines" / f"{bare}.json"
    assert calibration_target(calibration_profile("light"), Path("x.json")) == Path("x.json")


def test_an_unknown_profile_is_refused(calibrated):
    result = CliRunner().invoke(calibrate, ["--profile", "heavy"])
    assert result.exit_code == 2
    assert "spine has no load profile 'heavy' (its profiles: light, standard, standard_deletes)" in result.output
    assert calibrated == []
