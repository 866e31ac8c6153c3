"""Live episodes of the adversarial suite on the local backend (time scale 0.1: about 40 s each):
declaring at once fails, and the golden fix declared at once, without its waits, passes, on a task
whose fault fires in the agent's window too, where it keeps the one wait before that fault (CI's
adversarial qualification of revoked-grant runs fix-now where every fault fires before the agent)."""

from __future__ import annotations

import json

import psutil
import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeOptions
from helpers.episodes import run_episode_retrying

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

SCALE = 0.1


def _confined(task: str, out):
    written = write_bundles(compile_paths([f"tasks/{task}.arena"]), out)
    confined = next(w for w in written
                    if json.loads((w.path / "plan.json").read_text())["access"]["name"] == "confined")
    return open_bundle(confined.path)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return _confined("revoked-grant", tmp_path_factory.mktemp("bundles"))


@pytest.fixture(scope="module")
def in_window_bundle(tmp_path_factory):
    """failover-read-only: the database turns read-only 45 s into the agent's window."""
    return _confined("failover-read-only", tmp_path_factory.mktemp("bundles"))


def _episode(bundle, tmp_path, name: str):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    options = EpisodeOptions(agent=f"adversary:{name}", time_scale=SCALE, out=tmp_path / "run")
    result = run_episode_retrying(bundle, options)
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert not left, f"processes left behind: {left}"
    return result, (tmp_path / "run" / "agent.log").read_text()


def test_declare_now_fails(bundle, tmp_path):
    result, log = _episode(bundle, tmp_path, "declare-now")
    assert result.status == "scored" and result.reward == 0 and not result.outcome
    assert "declare-now: declaring without any repair" in log
    boundary = json.loads((tmp_path / "run" / "evidence" / "boundary.json").read_text())
    assert boundary["declared"] is True and boundary["agent"] == "adversary:declare-now"


def test_fix_now_passes_keeping_the_wait_for_a_fault_in_the_window(in_window_bundle, tmp_path):
    result, log = _episode(in_window_bundle, tmp_path, "fix-now")
    assert result.status == "scored" and result.reward == 1, (tmp_path / "run" / "verdict.json").read_text()
    assert "removed wait: wait-until-healthy" in log
    assert "kept wait: sleep" in log  # without it the repair came before the failover and was undone
    actions = [json.loads(line) for line in (tmp_path / "run" / "actions.jsonl").read_text().splitlines()]
    assert "db-sql" in [a["tool"] for a in actions]
