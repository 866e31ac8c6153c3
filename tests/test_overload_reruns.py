"""The live tests' reruns after an overload (tests/helpers/overload.py), on both sides: a live test
failed by an overload, or whose episode failed on latency gates alone, runs again, at most twice; a
failure of any other kind (latency and an error rate), a verdict set aside by a retry, and a test
not marked live are final at once. Run as a pytest session of its own (a
subprocess) with the same hooks as tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

CONFTEST = """
from helpers.overload import (  # noqa: F401
    _overload_looks_under_basetemp,
    pytest_collection_modifyitems,
    pytest_runtest_makereport,
    pytest_runtest_setup,
)
"""

TESTS = '''
import os
from pathlib import Path

import pytest

from arenac.model.verdict import Check, Gate
from arenac.verify.verdict import scored, unscored

OVERLOADED = unscored(None, None, "infra_error",
                      "harness overloaded: load generator p99 start lag 131 ms > 50 ms").model_dump_json()
P99 = Check(kind="predicate", text="p99(send, phase: peak) <= 1.5 * baseline.p99(send, phase: peak) + 150ms",
            passed=False, detail="346.4 ms <= 159 ms does not hold: 4 of 76 requests over 159 ms")
ERRORS = Check(kind="predicate", text="error_rate(send) <= 1%", passed=False, detail="12.5% <= 1% does not hold")
RESTART = Check(kind="restart", text="restart(message) at t=247.4", passed=True, detail="came back")


def failed_on(*failing):
    """A scored failure whose survives-restart check failed on these re-checks."""
    survives = Check(kind="challenge", text="survives restart(message)", passed=False, detail="",
                     checks=(RESTART, *failing))
    verdict = scored("t", "t-1", None, Gate(passed=True, checks=()), Gate(passed=False, checks=(survives,)))
    return verdict.model_dump_json()


def attempt(name):
    counter = Path(os.environ["ATTEMPTS"]) / name
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count


@pytest.mark.live
def test_overloaded_twice_then_passes():
    assert attempt("overloaded_twice") >= 3, OVERLOADED


@pytest.mark.live
def test_always_overloaded():
    attempt("always_overloaded")
    raise AssertionError(OVERLOADED)


@pytest.mark.live
def test_fails_for_another_reason():
    attempt("another_reason")
    assert 0 == 1, "reward 0"


@pytest.mark.live
def test_an_overloaded_verdict_left_by_the_attempt(tmp_path):
    count = attempt("verdict_left")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(OVERLOADED)
    assert count >= 2  # a plain message: the verdict on disk says why


@pytest.mark.live
def test_a_verdict_set_aside_by_a_retry_is_not_the_result(tmp_path):
    attempt("set_aside")
    (tmp_path / "run.overloaded-1").mkdir()
    (tmp_path / "run.overloaded-1" / "verdict.json").write_text(OVERLOADED)
    assert False


@pytest.mark.live
def test_a_verdict_failed_on_latency_alone(tmp_path):
    count = attempt("latency_alone")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(failed_on(P99))
    assert count >= 2, "reward 0"


@pytest.mark.live
def test_a_verdict_failed_on_latency_and_more(tmp_path):
    attempt("latency_and_more")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(failed_on(P99, ERRORS))
    assert False, "reward 0"


def test_not_live():
    attempt("not_live")
    raise AssertionError(OVERLOADED)
'''


def test_only_an_overloaded_live_test_runs_again(tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "conftest.py").write_text(CONFTEST)
    (tmp_path / "suite" / "test_inner.py").write_text(TESTS)
    (tmp_path / "attempts").mkdir()
    env = {**os.environ, "ATTEMPTS": str(tmp_path / "attempts"), "PYTHONPATH": str(ROOT / "tests")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "no:kmock",
                          "--basetemp", str(tmp_path / "basetemp"), "-o", "markers=live: a live test",
                          str(tmp_path / "suite")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    attempts = {path.name: int(path.read_text()) for path in (tmp_path / "attempts").iterdir()}
    assert attempts == {"overloaded_twice": 3, "always_overloaded": 3, "another_reason": 1, "verdict_left": 2,
                        "set_aside": 1, "latency_alone": 2, "latency_and_more": 1, "not_live": 1}, ran.stdout
    summary = ran.stdout.strip().splitlines()[-1]
    assert "5 failed, 3 passed, 6 rerun" in summary, ran.stdout
    assert ran.returncode == 1
    # a failed live test's report shows the machine; the unmarked one's does not
    assert ran.stdout.count("the machine at the failure") == 4, ran.stdout
    assert "load average" in ran.stdout and "busiest processes" in ran.stdout
