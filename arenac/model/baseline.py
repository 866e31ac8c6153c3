"""A substrate's calibration records (library/substrates/<name>/baselines/<profile>.json, one per
calibrated load profile, written by `arenac calibrate --profile <profile>`:
arenac/substrate/calibrate.py; the one of the task's own profile is copied into every run's
evidence as baseline.json) as models.

Contract: the one definition of the files' shape and place, read by the compiler (the routes of
E0218, the void check; it must not load the evidence models: `arenac check` starts fast) and by
the verifier. Unknown fields are refused, as in every evidence file (arenac/model/evidence.py).
A record names its profile (`profile.name`, `SUBSTRATE.PROFILE`); the file of profile P holds P's
record, never another profile's.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from arenac.model.record import Record

BASELINES = "baselines"  # the folder of a substrate's calibrations, one file per load profile


def baseline_file(profile: str) -> str:
    """Where the calibration of PROFILE (unqualified: `standard`) is, relative to its substrate's folder."""
    return f"{BASELINES}/{profile}.json"


class BaselineSpread(Record):
    """One figure over the calibration's runs."""

    median: float
    min: float
    max: float


class BaselineFigures(Record):
    """One route in one phase: the median over the calibration's runs (a missing figure fails a
    predicate that reads it)."""

    error_rate: float | None = None
    goodput_rps: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    requests: int | None = None
    spread: dict[str, BaselineSpread] = Field(default_factory=dict)  # figure -> its spread over the runs


class CalibrationMachine(Record):
    cpus: int
    python: str


class Baseline(Record):
    """The substrate's healthy baseline for one load profile
    (library/substrates/<name>/baselines/<profile>.json, written by `arenac calibrate --profile`:
    arenac/substrate/calibrate.py)."""

    substrate: str
    generated_by: str
    # the profile as calibrated (calibrate.describe), as JSON; its `name` (SUBSTRATE.PROFILE) is the
    # profile the figures belong to (the grader checks it against the task's), the rest is not read
    profile: dict[str, JsonValue]
    runs: int
    client_timeout_s: float
    latency_over: str  # what the latencies cover, in words
    goodput_rps: float  # over every route and phase
    error_rate: float
    max_start_lag_s: float  # how late the calibrating generator started a request
    machine: CalibrationMachine
    routes: dict[str, dict[str, BaselineFigures]]  # route -> phase -> figures ("all" -> "all": everything)

    @property
    def profile_name(self) -> str:
        """The qualified name of the calibrated profile (`spine.standard`), "" when it has none."""
        name = self.profile.get("name")
        return name if isinstance(name, str) else ""
