"""Resuming a qualification (resume.py): which run directories stand for their episode.

The decision is tested on a complete run directory made the way run_episode makes one (begin_run,
recorded evidence, the verifier's verdict, finish_run), then altered. The last test is live: one
real episode by `arenac run`, copied into a qualification directory as its three controls (one of
them marked incomplete), then `arenac qualify` on it reuses two and runs only the third (two live
episodes in all, under the machine's live-episode lock)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arenac.rundir import INCOMPLETE
from arenac.runner.bundle import open_bundle
from arenac.runner.options import ClusterTarget, EpisodeOptions
from arenac.runner.records import begin_run, finish_run
from arenac.runner.resume import decide
from arenac.verify import grade, write_results
from helpers.golden import complete_variant
from livelock import live_lock
from verify.recorded import RecordedRun

GOLDEN = complete_variant("minimal")  # the golden bundle, with the chart files its manifest pins


@pytest.fixture(scope="module")
def bundle():
    return open_bundle(GOLDEN)


def make_run(root: Path, bundle, agent: str = "noop", inject: bool = True, time_scale: float = 0.1,
             status: str = "scored", reason: str | None = None, cluster: ClusterTarget | None = None) -> Path:
    """A complete run directory of BUNDLE, written in run_episode's order."""
    recorded = RecordedRun(root, time_scale=time_scale)
    recorded.task, recorded.variant = bundle.plan.task, bundle.plan.variant
    record = begin_run(recorded.run_dir, bundle, EpisodeOptions(agent=agent, time_scale=time_scale,
                                                                out=recorded.run_dir, inject_faults=inject,
                                                                cluster=cluster))
    recorded.timeline.update(status=status, void_reason=reason)
    recorded.write()
    write_results(recorded.run_dir, grade(recorded.run_dir / "evidence"))
    finish_run(recorded.run_dir, record, 42.5)
    return recorded.run_dir


def edit_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


# ---- the decision ---------------------------------------------------------------------------------
def test_a_complete_run_of_this_episode_is_reused_with_its_recorded_result(tmp_path, bundle):
    run_dir = make_run(tmp_path, bundle)
    decision = decide(run_dir, bundle, "noop", True, 0.1)
    assert decision.reason == "complete"
    result = decision.result
    assert (result.out, result.status, result.reward, result.outcome, result.safe_repair, result.wall_s) == \
        (run_dir, "scored", 1, True, True, 42.5)


def test_another_infra_error_stands_but_an_interrupted_run_is_run_again(tmp_path, bundle):
    crashed = make_run(tmp_path / "a", bundle, status="infra_error", reason="PostgreSQL did not start")
    result = decide(crashed, bundle, "noop", True, 0.1).result
    assert result is not None and (result.status, result.reward) == ("infra_error", 0)
    stopped = make_run(tmp_path / "b", bundle, status="infra_error", reason="interrupted")
    assert decide(stopped, bundle, "noop", True, 0.1).result is None
    assert decide(stopped, bundle, "noop", True, 0.1).reason == "it was interrupted"


@pytest.mark.parametrize("alter, why", [
    (lambda d: (d / INCOMPLETE).write_text(""), "marked incomplete"),
    (lambda d: edit_json(d / "run.json", variant="minimal-00000000"), "variant"),
    (lambda d: edit_json(d / "run.json", bundle_digest="0" * 64), "bundle_digest"),
    (lambda d: edit_json(d / "run.json", wall_s=None), "no wall time"),
    (lambda d: (d / "run.json").unlink(), "no readable run.json"),  # a run of an earlier version
    (lambda d: (d / "run.json").write_text("{"), "no readable run.json"),
    (lambda d: (d / "verdict.json").unlink(), "verdict.json: missing"),
    (lambda d: (d / "reward.json").write_text("{"), "reward.json: not valid JSON"),
    (lambda d: edit_json(d / "reward.json", reward=0), "reward.json disagrees"),
    (lambda d: edit_json(d / "verdict.json", variant="other-1"), "verdict.json is of variant"),
    (lambda d: (d / "evidence" / "timeline.json").unlink(), "timeline.json: missing"),
    (lambda d: edit_json(d / "evidence" / "timeline.json", status="void"), "the timeline void"),
    (lambda d: shutil.rmtree(d), "no run directory"),
])
def test_an_altered_run_is_run_again(tmp_path, bundle, alter, why):
    run_dir = make_run(tmp_path, bundle)
    alter(run_dir)
    decision = decide(run_dir, bundle, "noop", True, 0.1)
    assert decision.result is None and why in decision.reason, decision.reason


@pytest.mark.parametrize("agent, inject, time_scale, why", [
    ("oracle", True, 0.1, "agent"),
    ("noop", False, 0.1, "inject_faults"),  # the healthy control is the no-op agent without the faults
    ("noop", True, 1.0, "time_scale"),
])
def test_a_run_of_another_episode_is_run_again(tmp_path, bundle, agent, inject, time_scale, why):
    run_dir = make_run(tmp_path, bundle)
    decision = decide(run_dir, bundle, agent, inject, time_scale)
    assert decision.result is None and why in decision.reason


def test_a_run_on_another_backend_is_run_again(tmp_path, bundle):
    local = make_run(tmp_path / "local", bundle)
    assert json.loads((local / "run.json").read_text())["backend"] == "local"
    assert decide(local, bundle, "noop", True, 0.1, "local").result is not None
    decision = decide(local, bundle, "noop", True, 0.1, "kubernetes")
    assert decision.result is None and "backend 'local'" in decision.reason, decision.reason
    # a cluster's run stands for a cluster's episode only
    on_cluster = make_run(tmp_path / "cluster", bundle, cluster=ClusterTarget(context="kind-arenac"))
    assert decide(on_cluster, bundle, "noop", True, 0.1, "kubernetes").result is not None
    assert decide(on_cluster, bundle, "noop", True, 0.1).result is None
    # run.json of an earlier version names no backend: it was local
    earlier = {k: v for k, v in json.loads((local / "run.json").read_text()).items() if k != "backend"}
    (local / "run.json").write_text(json.dumps(earlier))
    assert decide(local, bundle, "noop", True, 0.1).result is not None


# ---- live: a real episode, then a qualification that resumes over copies of it ------------------
@pytest.mark.live
def test_a_qualification_reuses_complete_runs_and_reruns_the_incomplete_one(tmp_path):
    from arenac.pipeline import compile_paths, write_bundles

    written = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), tmp_path / "build")
    bundle_dir = next(w.path for w in written
                      if json.loads((w.path / "plan.json").read_text())["access"]["name"] == "confined")
    bundle = open_bundle(bundle_dir)
    env = dict(os.environ, ARENAC_STATE_DIR=str(tmp_path / "state"))
    arenac = [sys.executable, "-m", "arenac.cli"]
    real = tmp_path / "real"
    with live_lock():
        done = subprocess.run(arenac + ["run", str(bundle_dir), "--agent", "noop", "--time-scale", "0.1",
                                        "--out", str(real)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # the no-op's scored failure (docs/runner.md)
    assert not (real / INCOMPLETE).exists()
    record = json.loads((real / "run.json").read_text())
    assert record["variant"] == bundle.plan.variant and record["agent"] == "noop" and record["wall_s"] > 0
    assert json.loads((real / "evidence" / "timeline.json").read_text())["status"] == "scored"

    # a real complete run grades; a copy marked incomplete is refused
    assert subprocess.run(arenac + ["grade", str(real), "--no-write"], capture_output=True).returncode == 0
    crashed = tmp_path / "crashed"
    shutil.copytree(real, crashed)
    (crashed / INCOMPLETE).write_text("")
    refusal = subprocess.run(arenac + ["grade", str(crashed)], capture_output=True, text=True)
    assert refusal.returncode == 1 and "marked incomplete" in refusal.stderr and refusal.stderr.count("\n") == 1

    # a qualification directory as a stopped qualification leaves it: no-op and oracle complete
    # (the oracle's a copy of the no-op run, relabelled: what is reused is what is recorded),
    # healthy interrupted midway (marked incomplete)
    out = tmp_path / "qualification"
    runs = out / bundle.plan.task / bundle.plan.variant
    for name, changes in (("noop-1", {}), ("oracle-1", {"agent": "oracle"}), ("healthy-1", {"inject_faults": False})):
        shutil.copytree(real, runs / name)
        edit_json(runs / name / "run.json", **changes)
    (runs / "healthy-1" / INCOMPLETE).write_text("")
    before = {name: (runs / name / "verdict.json").stat().st_mtime_ns for name in ("noop-1", "oracle-1")}
    with live_lock():
        done = subprocess.run(arenac + ["qualify", str(bundle_dir), "-k", "1", "--time-scale", "0.1",
                                        "--out", str(out)], env=env, capture_output=True, text=True, timeout=900)
    lines = {line.split(":")[0].split()[-1]: line for line in done.stdout.splitlines() if "#1:" in line}
    assert "reused" in lines["noop#1"] and "reward 0" in lines["noop#1"], done.stdout
    assert "reused" in lines["oracle#1"], done.stdout
    assert "reused" not in lines["healthy#1"], done.stdout + done.stderr  # run afresh (its reward is the substrate's)
    assert "2 reused from an earlier run" in done.stdout
    report = json.loads((out / "qualification.json").read_text())
    assert report["reused"] == 2 and report["episodes"]["total"] == 3
    controls = report["variants"][0]["controls"]
    assert controls["noop"]["ok"] and not controls["oracle"]["ok"]  # the relabelled oracle run failed, as recorded
    assert controls["noop"]["runs"][0]["wall_s"] == record["wall_s"]
    assert done.returncode == 1
    healthy = json.loads((runs / "healthy-1" / "run.json").read_text())
    assert healthy["inject_faults"] is False and healthy["wall_s"] > 0
    assert not (runs / "healthy-1" / INCOMPLETE).exists()
    assert {name: (runs / name / "verdict.json").stat().st_mtime_ns for name in ("noop-1", "oracle-1")} == before
