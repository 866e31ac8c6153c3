"""Live episodes of the adversarial suite on the local backend (time scale 0.1: about 40 s each):
declaring at once fails, and the golden fix declared at once, without its waits, passes."""

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


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    written = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), out)
    confined = next(w for w in written
                    if json.loads((w.path / "plan.json").read_text())["access"]["name"] == "confined")
    return open_bundle(confined.path)


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


def test_fix_now_passes(bundle, tmp_path):
    result, log = _episode(bundle, tmp_path, "fix-now")
    assert result.status == "scored" and result.reward == 1, (tmp_path / "run" / "verdict.json").read_text()
    assert "removed wait: wait-until-healthy" in log
    actions = [json.loads(line) for line in (tmp_path / "run" / "actions.jsonl").read_text().splitlines()]
    assert [a["tool"] for a in actions if a["tool"] != "declare_repair_complete"] == ["db-sql"]
