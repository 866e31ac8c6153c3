"""Qualification's bookkeeping: which episodes it starts and how it reports them. The episodes are
replaced by a recorder here (real ones are exercised by test_episode.py and by CI's qualification)."""

from __future__ import annotations

import threading

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner import qualify as qualification
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeResult

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    written = write_bundles(compile_paths(["tasks/revoked-grant.arena", "tasks/slow-reads.arena"]), out)
    return [open_bundle(w.path) for w in written]


def test_variants_of_one_task_share_healthy_runs_and_other_tasks_do_not(bundles):
    keys = {}
    for bundle in bundles:
        keys.setdefault(bundle.plan.task, set()).add(qualification.healthy_key(bundle))
    assert {task: len(k) for task, k in keys.items()} == {"revoked-grant": 1, "slow-reads": 1}
    assert keys["revoked-grant"] != keys["slow-reads"]


def test_healthy_runs_once_per_group_and_every_variant_reports_them(bundles, tmp_path, monkeypatch):
    started = []

    def episode(bundle, options, stop):
        started.append((bundle.plan.variant, options.out.name))
        reward = 1 if options.out.name.startswith(("healthy", "oracle")) else 0
        return EpisodeResult(options.out, "scored", reward, reward == 1, reward == 1, 1.0)

    monkeypatch.setattr(qualification, "run_episode", episode)
    report = qualification.qualify(bundles, 2, 0.1, tmp_path, jobs=2)
    assert report.ok is True and report.jobs == 2
    healthy = [run for run in started if run[1].startswith("healthy")]
    assert len(healthy) == 2 * 2  # two tasks, k=2
    assert len(started) == 2 * 2 + len(bundles) * 2 * 2  # plus no-op and oracle of every variant
    for task in ("revoked-grant", "slow-reads"):
        variants = [v for v in report.variants if v.task == task]
        sources = {v.controls["healthy"].shared_from or v.variant for v in variants}
        assert len(sources) == 1
        assert all(len(v.controls["healthy"].runs) == 2 for v in variants)


def test_an_interrupted_qualification_starts_no_further_episode(bundles, tmp_path, monkeypatch):
    stop = threading.Event()
    started = []

    def episode(bundle, options, stop_):
        started.append(options.out)
        stop.set()  # Ctrl-C during the first episode
        return EpisodeResult(options.out, "infra_error", 0, False, False, 1.0)

    monkeypatch.setattr(qualification, "run_episode", episode)
    report = qualification.qualify(bundles, 1, 0.1, tmp_path, jobs=1, stop=stop)
    assert len(started) == 1 and report.ok is False
