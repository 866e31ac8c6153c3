"""A substrate's calibration record (library/substrates/<name>/baseline.json, written by `arenac
substrate calibrate`: arenac/substrate/calibrate.py; copied into every run's evidence as
baseline.json) as models.

Contract: the one definition of the file's shape, read by the compiler's void check (which must not
load the evidence models: `arenac check` starts fast) and by the verifier. Unknown fields are
refused, as in every evidence file (arenac/model/evidence.py).
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from arenac.model.record import Record


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
    """The substrate's healthy baseline for its load profile (library/substrates/<name>/baseline.json,
    written by `arenac substrate calibrate`: arenac/substrate/calibrate.py)."""

    substrate: str
    generated_by: str
    profile: dict[str, JsonValue]  # the profile as calibrated (calibrate.describe), as JSON; not read by a gate
    runs: int
    client_timeout_s: float
    latency_over: str  # what the latencies cover, in words
    goodput_rps: float  # over every route and phase
    error_rate: float
    max_start_lag_s: float  # how late the calibrating generator started a request
    machine: CalibrationMachine
    routes: dict[str, dict[str, BaselineFigures]]  # route -> phase -> figures ("all" -> "all": everything)
