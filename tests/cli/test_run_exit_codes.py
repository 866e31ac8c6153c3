"""`arenac run`'s exit code says what the run was (0 pass, 1 scored failure, 4 void, 5 infra_error)
and its output lists the failing checks; the episode is replaced by a recorder that leaves a
verdict, as a real one does (real runs: tests/runner/test_episode.py)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from arenac.cli import episodes, qualify_table
from arenac.model.verdict import Check, Gate, Verdict
from arenac.runner.options import EpisodeResult
from arenac.verify.verdict import scored

FAILING = Check(kind="predicate", text="error_rate(send) <= 1%", passed=False,
                detail="12.5% <= 1% does not hold; error_rate(send) = 12.5% (25 errors / 200 requests)")
PASSING = Check(kind="predicate", text="goodput >= 0.95 * baseline.goodput", passed=True, detail="holds")


@pytest.mark.parametrize("status, reward, code", [("scored", 1, 0), ("scored", 0, 1), ("failed", 0, 1),
                                                  ("void", 0, 4), ("infra_error", 0, 5)])
def test_the_exit_code_says_what_the_run_was(tmp_path, status, reward, code):
    assert episodes.run_exit_code(EpisodeResult(tmp_path, status, reward, reward == 1, reward == 1, 1.0)) == code


def _run(monkeypatch, tmp_path, verdict: Verdict | None, status: str, reward: int) -> int:
    plan = SimpleNamespace(variant="t-1234abcd")
    monkeypatch.setattr(episodes, "prepare",
                        lambda dirs, isolation, cluster=None: ([SimpleNamespace(plan=plan)], threading.Event()))

    def run_one(bundle, options, stop):
        options.out.mkdir(parents=True)
        if verdict is not None:
            (options.out / "verdict.json").write_text(verdict.model_dump_json())
        return EpisodeResult(options.out, status, reward, reward == 1, reward == 1, 1.0)

    monkeypatch.setattr(episodes, "run_one", run_one)
    return episodes.run_command("bundle", "noop", 0.1, str(tmp_path / "run"), False, None)


def test_a_scored_failure_exits_1_and_prints_its_failing_checks(monkeypatch, tmp_path, capsys):
    verdict = scored("t", "t-1234abcd", None, Gate(passed=False, checks=(FAILING, PASSING)),
                     Gate(passed=True, checks=()))
    assert _run(monkeypatch, tmp_path, verdict, "scored", 0) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("t-1234abcd: scored, reward 0")
    assert out[1:] == [f"  FAIL  {FAILING.text}: {FAILING.detail}"]  # the passing check is not listed


def test_a_pass_exits_0_and_lists_nothing(monkeypatch, tmp_path, capsys):
    verdict = scored("t", "t-1234abcd", None, Gate(passed=True, checks=(PASSING,)), Gate(passed=True, checks=()))
    assert _run(monkeypatch, tmp_path, verdict, "scored", 1) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_a_void_run_without_a_verdict_exits_4(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, None, "void", 0) == 4
    assert capsys.readouterr().out.startswith("t-1234abcd: void")


def _control_run(tmp_path, control: str, verdict: Verdict, satisfied: bool):
    run_dir = tmp_path / control
    run_dir.mkdir()
    (run_dir / "verdict.json").write_text(verdict.model_dump_json())
    result = EpisodeResult(run_dir, "scored", verdict.reward, verdict.outcome, verdict.safe_repair, 38.0)
    return SimpleNamespace(bundle=SimpleNamespace(plan=SimpleNamespace(variant="t-1234abcd")), control=control,
                           index=0, result=result, reused=False, satisfied=satisfied)


def test_qualify_lists_the_failing_checks_under_a_control_run_not_as_required(tmp_path, capsys):
    failed = scored("t", "t-1234abcd", None, Gate(passed=False, checks=(FAILING, PASSING)),
                    Gate(passed=True, checks=()))
    qualify_table.progress_line(_control_run(tmp_path, "healthy", failed, satisfied=False))
    assert capsys.readouterr().out.splitlines() == [
        "  BAD t-1234abcd healthy#1: scored, reward 0, 38.0 s", f"      FAIL  {FAILING.text}: {FAILING.detail}"]


def test_qualify_lists_nothing_under_a_control_run_as_required(tmp_path, capsys):
    failed = scored("t", "t-1234abcd", None, Gate(passed=False, checks=(FAILING,)), Gate(passed=True, checks=()))
    qualify_table.progress_line(_control_run(tmp_path, "noop", failed, satisfied=True))
    assert capsys.readouterr().out.splitlines() == ["  ok  t-1234abcd noop#1: scored, reward 0, 38.0 s"]
