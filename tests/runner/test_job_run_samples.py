"""runs.json records the job's failed runs once each, on the plan clock (runner/backlog.py), read from
spine's /admin/windows (substrate/spine/harness.py `runs`)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from arenac.model.evidence import JobRuns
from arenac.runner.backlog import JobRunSamples
from arenac.substrate.interface import FailedJobRun, JobReading
from arenac.substrate.spine.harness import runs as spine_runs


class _Clock:
    time_scale = 0.1

    def now(self) -> float:
        return 100.0

    def real(self, plan_seconds: float) -> float:
        return plan_seconds * self.time_scale

    def plan(self, real_seconds: float) -> float:
        return real_seconds / self.time_scale


class _IO:
    """Hands whose substrate reports `readings` in turn, then stops the sampler."""

    def __init__(self, readings: list[JobReading], stop: threading.Event) -> None:
        self.readings, self.stop = list(readings), stop
        self.substrate = SimpleNamespace(runs=self._runs)

    def _runs(self, _io, job: str) -> JobReading:
        assert job == "maintenance"
        if len(self.readings) == 1:
            self.stop.set()
        return self.readings.pop(0)


def test_a_failed_run_is_recorded_once_at_its_start_on_the_plan_clock(tmp_path):
    started = time.time() - 0.5  # half a real second ago: 5 plan seconds at time scale 0.1
    failure = FailedJobRun(start_unix=started, error="PoolTimeout: no database connection free")
    stop = threading.Event()
    io = _IO([JobReading(completed=2), JobReading(completed=2, failed=(failure,)),
              JobReading(completed=3, failed=(failure,))], stop)
    samples = JobRunSamples(tmp_path / "runs.json", _Clock(), ("maintenance",))
    samples.sample(io, stop)
    recorded = JobRuns.model_validate_json((tmp_path / "runs.json").read_text())
    assert [count for _, count in recorded.jobs["maintenance"]] == [2, 2, 3]
    (run,) = recorded.failed["maintenance"]
    # 5 plan seconds before the clock's 100, less the sampler's waits between reads (0.1 real s each)
    assert run.error == failure.error and 92.0 <= run.t <= 95.0


def test_without_a_failed_run_the_file_says_nothing_of_failures(tmp_path):
    stop = threading.Event()
    JobRunSamples(tmp_path / "runs.json", _Clock(), ("maintenance",)).sample(_IO([JobReading(completed=1)], stop), stop)
    assert "failed" not in (tmp_path / "runs.json").read_text()


def test_spine_reports_the_windows_that_ended_in_an_error():
    reply = {"windows": [{"start": 10.0, "end": 10.6}, {"start": 70.0, "end": 70.1, "error": "PoolTimeout: x"}],
             "active": False, "completed": 1}
    hands = SimpleNamespace(admin=lambda service, method, path: reply if (service, path) == (
        "maintenance", "/admin/windows") else None)
    assert spine_runs(hands, "maintenance") == JobReading(
        completed=1, failed=(FailedJobRun(start_unix=70.0, error="PoolTimeout: x"),))
