"""An episode whose harness was overloaded runs again under qualify, and only such an episode: the
attempt is set aside with its evidence, and the report and the table say so. Episodes are replaced
by a recorder here (retry.py decides on the result alone)."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest

from arenac.cli.qualify_table import print_table
from arenac.pipeline import compile_paths, write_bundles
from arenac.runner import qualify as qualification
from arenac.runner import retry
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeOptions, EpisodeResult

OVERLOADED = "harness overloaded: load generator p99 start lag 55 ms > 50 ms"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    return open_bundle(write_bundles(compile_paths(["tasks/revoked-grant.arena"]), out)[0].path)


def _scripted(*outcomes: tuple[str, str]):
    """A launch giving these (status, reason) in turn, each attempt writing its run directory."""
    script = list(outcomes)
    calls: list[int] = []

    def launch(bundle, options, stop):
        status, reason = script.pop(0)
        options.out.mkdir(parents=True, exist_ok=True)
        calls.append(len(calls) + 1)
        (options.out / "attempt").write_text(str(len(calls)))
        return EpisodeResult(options.out, status, 1 if status == "scored" else 0, status == "scored",
                             status == "scored", 1.0, reason)

    return launch, calls


def _options(tmp_path):
    return EpisodeOptions(agent="noop", time_scale=0.1, out=tmp_path / "healthy-1")


def test_an_overloaded_attempt_is_set_aside_and_run_again(bundle, tmp_path):
    launch, calls = _scripted(("infra_error", OVERLOADED), ("scored", ""))
    attempts = retry.run_retrying(launch, bundle, _options(tmp_path), threading.Event(), retries=1)
    assert attempts.result.status == "scored" and attempts.result.out == tmp_path / "healthy-1"
    assert len(calls) == 2
    (aside,) = attempts.earlier
    assert aside.reason == OVERLOADED and aside.run_dir == tmp_path / "healthy-1.overloaded-1"
    assert (aside.run_dir / "attempt").read_text() == "1"  # its evidence is kept
    assert (tmp_path / "healthy-1" / "attempt").read_text() == "2"


@pytest.mark.parametrize("status, reason", [("infra_error", "PostgreSQL did not start"),
                                            ("void", "the fault did not manifest"), ("scored", ""),
                                            ("failed", "the agent dropped the harness's role")])
def test_nothing_but_an_overloaded_trial_is_run_again(bundle, tmp_path, status, reason):
    launch, calls = _scripted((status, reason), ("scored", ""))
    attempts = retry.run_retrying(launch, bundle, _options(tmp_path), threading.Event(), retries=3)
    assert (attempts.result.status, attempts.earlier, len(calls)) == (status, (), 1)


def test_retries_run_out_and_the_last_overloaded_result_stands(bundle, tmp_path):
    launch, calls = _scripted(("infra_error", OVERLOADED), ("infra_error", OVERLOADED), ("scored", ""))
    attempts = retry.run_retrying(launch, bundle, _options(tmp_path), threading.Event(), retries=1)
    assert attempts.result.status == "infra_error" and len(calls) == 2 and len(attempts.earlier) == 1


def test_a_stopped_run_is_not_run_again(bundle, tmp_path):
    launch, calls = _scripted(("infra_error", OVERLOADED), ("scored", ""))
    stop = threading.Event()
    stop.set()
    attempts = retry.run_retrying(launch, bundle, _options(tmp_path), stop, retries=1)
    assert attempts.result.status == "infra_error" and len(calls) == 1 and not attempts.earlier


def test_set_aside_names_do_not_overwrite_earlier_ones(bundle, tmp_path):
    (tmp_path / "healthy-1.overloaded-1").mkdir()
    launch, _ = _scripted(("infra_error", OVERLOADED), ("scored", ""))
    attempts = retry.run_retrying(launch, bundle, _options(tmp_path), threading.Event(), retries=1)
    assert attempts.earlier[0].run_dir.name == "healthy-1.overloaded-2"


def _qualify_with_first_healthy_overloaded(bundle, tmp_path, monkeypatch, retries):
    seen: set[str] = set()

    def episode(bundle_, options, stop):
        options.out.mkdir(parents=True, exist_ok=True)
        first = options.out.name not in seen
        seen.add(options.out.name)
        if options.out.name == "healthy-1" and first:
            return EpisodeResult(options.out, "infra_error", 0, False, False, 1.0, OVERLOADED)
        reward = 1 if options.out.name.startswith(("healthy", "oracle")) else 0
        return EpisodeResult(options.out, "scored", reward, reward == 1, reward == 1, 1.0)

    monkeypatch.setattr(qualification, "run_episode", episode)
    return qualification.qualify([bundle], 1, 0.1, tmp_path, retries=retries)


def test_qualify_runs_an_overloaded_control_again_and_reports_the_attempt(bundle, tmp_path, monkeypatch, capsys):
    report = _qualify_with_first_healthy_overloaded(bundle, tmp_path, monkeypatch, retries=1)
    assert report.ok is True and report.retried == 1
    assert report.episodes.model_dump() == {"scored": 3, "failed": 0, "void": 0, "infra_error": 0, "total": 3}
    recorded = json.loads((tmp_path / "qualification.json").read_text())
    run = recorded["variants"][0]["controls"]["healthy"]["runs"][0]
    assert run["status"] == "scored"
    assert run["earlier"] == [{"run_dir": f"{bundle.plan.task}/{bundle.plan.variant}/healthy-1.overloaded-1",
                               "reason": OVERLOADED}]
    assert "earlier" not in recorded["variants"][0]["controls"]["noop"]["runs"][0]
    print_table(report)
    printed = capsys.readouterr().out
    assert f"retried  {bundle.plan.variant} healthy#1: {OVERLOADED} (set aside: " in printed
    assert "1 overloaded attempts run again" in printed


def test_with_no_retries_an_overloaded_control_fails_the_qualification(bundle, tmp_path, monkeypatch):
    report = _qualify_with_first_healthy_overloaded(bundle, tmp_path, monkeypatch, retries=0)
    assert report.ok is False and report.retried is None
    assert "retried" not in json.loads((tmp_path / "qualification.json").read_text())


def test_a_recorded_overloaded_run_is_run_again_on_resume(bundle, tmp_path, monkeypatch):
    recorded = {"healthy-1": EpisodeResult(tmp_path, "infra_error", 0, False, False, 1.0, OVERLOADED),
                "noop-1": EpisodeResult(tmp_path, "scored", 0, False, False, 1.0)}

    def from_disk(run_dir, *args):
        result = recorded.get(run_dir.name)
        if result is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            return dataclasses.replace(result, out=run_dir)
        return None

    started = []

    def episode(bundle_, options, stop):
        started.append(options.out.name)
        reward = 1 if options.out.name.startswith(("healthy", "oracle")) else 0
        return EpisodeResult(options.out, "scored", reward, reward == 1, reward == 1, 1.0)

    monkeypatch.setattr(qualification.resume, "recorded_result", from_disk)
    monkeypatch.setattr(qualification, "run_episode", episode)
    report = qualification.qualify([bundle], 1, 0.1, tmp_path)
    assert report.ok is True and report.reused == 1 and report.retried == 1
    assert sorted(started) == ["healthy-1", "oracle-1"]  # the scored no-op run stands
