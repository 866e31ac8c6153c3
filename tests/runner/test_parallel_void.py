"""Two episodes side by side (threads of one process, as `qualify --jobs 2` runs them), one of
which voids: each record carries its own episode's reason (the void's last live check was once a
module global that every episode thread wrote). Live: starts two stacks."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from arenac.model.gates import Const, Metric, Predicate
from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import RunnableBundle, open_bundle
from arenac.runner.options import EpisodeOptions, EpisodeResult
from helpers.episodes import run_episode_retrying

pytestmark = pytest.mark.live  # starts two stacks

# what no episode can show: more than every request failing
NEVER = Predicate(text="error_rate(send) >= 200%", left=Metric(name="error_rate", route="send"), op=">=",
                  right=Const(value=2.0, dimension="fraction"))


def _never_manifesting(bundle: RunnableBundle) -> RunnableBundle:
    """The bundle with its faults' manifestation made impossible: its episode voids."""
    faults = tuple(f.model_copy(update={"manifest": NEVER, "manifest_within_s": 5.0}) for f in bundle.plan.faults)
    return dataclasses.replace(bundle, plan=bundle.plan.model_copy(update={"faults": faults}))


def _events(run_dir: Path, event: str) -> list[dict]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [record for record in map(json.loads, lines) if record["event"] == event]


def test_a_void_episode_beside_a_scored_one_records_its_own_reason(tmp_path):
    bundles = [open_bundle(w.path) for w in write_bundles(compile_paths(["tasks/revoked-grant.arena"]), tmp_path / "b")]
    voiding, scoring = _never_manifesting(bundles[0]), bundles[1]
    runs = {"void": (voiding, tmp_path / "run-void"), "scored": (scoring, tmp_path / "run-scored")}
    results: dict[str, EpisodeResult] = {}

    def one(name: str) -> None:
        bundle, out = runs[name]
        # side by side on two cores: an attempt whose harness was overloaded runs again, as qualify runs it
        results[name] = run_episode_retrying(bundle, EpisodeOptions(agent="noop", time_scale=0.1, out=out), retries=2)

    threads = [threading.Thread(target=one, args=(name,)) for name in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=400)
    assert sorted(results) == ["scored", "void"]

    void_dir = runs["void"][1]
    assert results["void"].status == "void", (void_dir / "events.jsonl").read_text()[-600:]
    fault = voiding.plan.faults[0].name
    assert results["void"].reason == f"fault '{fault}' did not manifest within 5s of its onset"
    [record] = _events(void_dir, "void")
    # its own predicate over its own ledger: the other episode checks `error_rate(send) > 20%`
    assert record["fault"] == fault
    assert " >= 200% does not hold; error_rate(send) = " in record["last_problem"], record
    assert "> 20%" not in record["last_problem"] and "run-scored" not in record["last_problem"], record
    verdict = json.loads((void_dir / "verdict.json").read_text())
    assert verdict["status"] == "void" and verdict["reason"] == results["void"].reason

    scored_dir = runs["scored"][1]
    assert results["scored"].status == "scored", (scored_dir / "events.jsonl").read_text()[-600:]
    assert results["scored"].reward == 0 and results["scored"].reason == ""
    assert not _events(scored_dir, "void") and [r["fault"] for r in _events(scored_dir, "manifested")] == ["grant"]
