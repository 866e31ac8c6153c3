"""Live tests that failed because the machine starved an episode run again, as qualify runs such an
episode again (arenac/runner/retry.py).

An infra_error `harness overloaded: ...` measured the machine, not the code under test: on a busy
two-core CI machine it happens now and then even to an episode alone, and the episodes of a test
module are too many to give each its own retry. So every test marked `live` carries
pytest-rerunfailures' `flaky` marker: it runs again, at most `RERUNS` times, when and only when its
failure is an overload. Any other failure is final at once, and a rerun that fails for another
reason fails the test.

Contract (a pytest plugin: tests/conftest.py imports its hooks and fixture by name):
- `pytest_collection_modifyitems` adds the marker to every live item; `pytest_runtest_setup`
  records when an attempt began (each attempt); a session fixture learns the temporary directory.
- The failure is an overload when the error's text names it (`harness overloaded: `, as a verdict
  printed in an assertion's message does), or when an episode of this attempt left a verdict
  `infra_error` `harness overloaded: ...` under the session's temporary directory (a verdict moved
  aside by a retry, `*.overloaded-N/`, is not that attempt's result and does not count).
- The failure is the machine's too when an episode of this attempt left a scored verdict that
  failed on upper latency gates alone (`pNN(...) <= L`, `<`): every failing check without failing
  sub-checks is one. A stall of a few hundred milliseconds that the harness's own clocks did not
  see (so not an overload) holds a handful of a short window's sends over such a bound, now and
  then, on a busy two-core machine (seen: 4 of 76 after a restart, at 362 ms against 159 ms, on
  an otherwise passing oracle). A latency regression fails every attempt, so it still fails.
- A failed live test's report gets a section "the machine at the failure" (`machine_now()`): the
  load average and the processes busiest over a short sample, to tell whether the machine, or
  something left running, starved it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from arenac.model.verdict import Check, Verdict
from arenac.runner.headroom import OVERLOADED_PREFIX
from arenac.verify.metrics import PERCENTILES

RERUNS = 2
_STARTED = pytest.StashKey[float]()
_basetemp: list[Path] = []  # the session's temporary directory, once known


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("live") is not None:
            _mark_reruns(item)


@pytest.fixture(autouse=True, scope="session")
def _overload_looks_under_basetemp(tmp_path_factory: pytest.TempPathFactory) -> None:
    _basetemp[:] = [tmp_path_factory.getbasetemp()]


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and item.get_closest_marker("live") is not None:
        report.sections.append(("the machine at the failure", machine_now()))
    return report


def _mark_reruns(item: pytest.Item) -> None:
    def the_machines(error: BaseException | None) -> bool:
        if error is None:  # the attempt passed (the plugin asks then too): nothing to look for
            return False
        if OVERLOADED_PREFIX in str(error):
            return True
        return any(_overloaded(v) or _failed_on_latency_alone(v)
                   for v in _verdicts_since(item.stash.get(_STARTED, time.time())))

    item.add_marker(pytest.mark.flaky(reruns=RERUNS, condition=the_machines))


def _verdicts_since(started: float) -> Generator[Verdict, None, None]:
    """The verdicts the episodes of an attempt that began at `started` left under the session's
    temporary directory (not those a retry set aside)."""
    for root in _basetemp:
        for path in root.rglob("verdict.json"):
            if ".overloaded-" in path.parent.name:
                continue
            try:
                if path.stat().st_mtime < started:
                    continue
                yield Verdict.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # half-written, or not a verdict: no episode's result
                continue


def _overloaded(verdict: Verdict) -> bool:
    return verdict.status == "infra_error" and (verdict.reason or "").startswith(OVERLOADED_PREFIX)


# a check's text starts with the predicate as the spec wrote it: `p99(send, phase: peak) <= ...`
_UPPER_LATENCY_GATE = re.compile(rf"^({'|'.join(PERCENTILES)})\([^)]*\) <=? ")


def _failed_on_latency_alone(verdict: Verdict) -> bool:
    if verdict.status != "scored" or verdict.gates is None:
        return False
    leaves = list(_failing_leaves((*verdict.gates.outcome.checks, *verdict.gates.safety.checks)))
    return bool(leaves) and all(_UPPER_LATENCY_GATE.match(check.text) for check in leaves)


def _failing_leaves(checks: tuple[Check, ...]) -> Generator[Check, None, None]:
    for check in checks:
        if check.passed:
            continue
        if any(not child.passed for child in check.checks):
            yield from _failing_leaves(check.checks)
        else:
            yield check


def machine_now(sample_s: float = 0.5, top: int = 8) -> str:
    import psutil

    processes = list(psutil.process_iter(["pid", "ppid", "username", "cmdline", "name"]))
    for process in processes:
        try:
            process.cpu_percent(None)
        except psutil.Error:
            pass
    time.sleep(sample_s)
    busy: list[tuple[float, psutil.Process]] = []
    for process in processes:
        try:
            busy.append((process.cpu_percent(None), process))
        except psutil.Error:
            pass
    busy = sorted((pair for pair in busy if pair[0] >= 1.0), key=lambda pair: pair[0], reverse=True)
    lines = [f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())} on {os.cpu_count()} CPUs; "
             f"busiest processes over {sample_s} s (1% of a CPU or more): {len(busy) or 'none'}"]
    for percent, process in busy[:top]:
        command = " ".join(process.info.get("cmdline") or [process.info.get("name") or "?"])[:160]
        lines.append(f"  {percent:5.1f}%  pid {process.info['pid']} (parent {process.info['ppid']}, "
                     f"{process.info.get('username')}): {command}")
    return "\n".join(lines)
