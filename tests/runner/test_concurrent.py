"""Two episodes side by side do not clash: each gets its own ports, data and evidence."""

from __future__ import annotations

import json
import threading

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeOptions
from helpers.episodes import run_episode_retrying

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def test_two_episodes_run_concurrently(tmp_path):
    bundles = [open_bundle(w.path) for w in write_bundles(compile_paths(["tasks/revoked-grant.arena"]), tmp_path / "b")]
    assert len(bundles) == 2
    results = {}

    def one(index, bundle):
        options = EpisodeOptions(agent="noop", time_scale=0.1, out=tmp_path / f"run-{index}")
        # two side by side on 2 cores: an attempt whose harness was starved runs again, as qualify's would
        results[index] = run_episode_retrying(bundle, options)

    threads = [threading.Thread(target=one, args=(i, b)) for i, b in enumerate(bundles)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert sorted(results) == [0, 1]
    for index, result in results.items():
        # the fault manifested and was measured in each episode's own ledger: scored, and failed
        assert result.status == "scored", (tmp_path / f"run-{index}" / "events.jsonl").read_text()[-600:]
        assert result.reward == 0
    plans = [json.loads((tmp_path / f"run-{i}" / "evidence" / "gates.json").read_text())["variant"] for i in (0, 1)]
    assert len(set(plans)) == 2
    actions = [(tmp_path / f"run-{i}" / "actions.jsonl").read_text() for i in (0, 1)]
    assert all("declare_repair_complete" in a for a in actions)
