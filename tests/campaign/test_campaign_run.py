"""The campaign's orchestration (arenac/campaign/run.py) with a scripted launcher standing in for
episodes (no stack starts here; real episodes: test_campaign_live.py): the order of the trials,
the retry policy (infra_error only, the attempts set aside and listed), a stop (trials left, an
interrupted one not recorded), and rows built from the run directory."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from arenac.campaign.run import plan_trials, run_campaign
from arenac.campaign.store import CampaignStore
from arenac.model.evidence import Timeline
from arenac.model.verdict import Check, Gate, GateResults, Verdict
from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeResult
from arenac.runner.records import write_model


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    return [open_bundle(w.path) for w in write_bundles(compile_paths(["tasks/revoked-grant.arena"]), out)]


class Script:
    """Launches by script: per (agent, variant), the statuses its attempts end with, in turn."""

    def __init__(self, outcomes: dict[str, list[str]], stop: threading.Event | None = None, stop_after: int = 0):
        self.outcomes, self.calls, self.stop, self.stop_after = outcomes, [], stop, stop_after
        self.lock = threading.Lock()

    def __call__(self, bundle, options, stop):
        with self.lock:
            self.calls.append((options.agent, bundle.plan.variant, options.out.name))
            if self.stop is not None and len(self.calls) >= self.stop_after:
                self.stop.set()
        status = self.outcomes.get(options.agent, ["scored"]).pop(0) if self.outcomes.get(options.agent) else "scored"
        reason = {"infra_error": "the substrate did not start", "void": "the fault did not manifest",
                  "interrupted": "interrupted"}.get(status, "")
        status = "infra_error" if status == "interrupted" else status
        reward = 1 if status == "scored" and options.agent == "oracle" else 0
        options.out.mkdir(parents=True, exist_ok=True)
        write_model(options.out / "evidence" / "timeline.json",
                    Timeline(time_scale=options.time_scale, status="void" if status == "scored" else status,
                             void_reason=reason or "scripted"))
        if status == "scored":
            check = Check(kind="predicate", text="error_rate(send) <= 1%", passed=bool(reward), detail="12.5% > 1%")
            write_model(options.out / "verdict.json", Verdict(
                status="scored", reward=reward, outcome=bool(reward), safe_repair=bool(reward),
                gates=GateResults(outcome=Gate(passed=bool(reward), checks=(check,)),
                                  safety=Gate(passed=True, checks=()))))
        return EpisodeResult(options.out, status, reward, bool(reward), bool(reward), 1.5, reason)


def _run(tmp_path: Path, bundles, script, agents=None, k=1, retries=1, jobs=1, stop=None):
    agents = agents or {"oracle": "oracle", "noop": "noop"}
    store = CampaignStore.open(tmp_path)
    try:
        outcome = run_campaign(plan_trials(agents, bundles, k), tmp_path, store, 0.1, jobs=jobs, retries=retries,
                               stop=stop, launch=script)
        return outcome, store.rows()
    finally:
        store.close()


def test_trial_one_of_every_pair_runs_before_any_trial_two(bundles):
    planned = plan_trials({"oracle": "oracle", "noop": "noop"}, bundles, 2)
    assert len(planned) == 2 * len(bundles) * 2
    first = planned[:2 * len(bundles)]
    assert {t.trial for t in first} == {1} and {t.trial for t in planned[len(first):]} == {2}
    assert planned[0].run_dir.as_posix() == f"runs/oracle/revoked-grant/{bundles[0].plan.variant}/trial-1"


def test_rows_are_recorded_from_the_run_directories(tmp_path, bundles):
    outcome, rows = _run(tmp_path, bundles, Script({}))
    assert outcome.complete and outcome.ran == 2 * len(bundles) and outcome.reused == 0
    oracle = next(r for r in rows if r.agent == "oracle")
    assert oracle.reward == 1 and oracle.status == "scored" and oracle.faults == {"grant": oracle.faults["grant"]}
    assert oracle.checks[0].text == "error_rate(send) <= 1%" and oracle.checks[0].passed
    noop = next(r for r in rows if r.agent == "noop")
    assert noop.reward == 0 and noop.checks[0].detail == "12.5% > 1%" and not noop.checks[0].passed


def test_an_infra_error_runs_again_and_its_attempt_is_listed(tmp_path, bundles):
    script = Script({"noop": ["infra_error", "scored"]})
    _, rows = _run(tmp_path, bundles[:1], script)
    noop = next(r for r in rows if r.agent == "noop")
    assert noop.status == "scored" and noop.attempts == 2
    assert noop.set_aside[0].run_dir == noop.run_dir + ".infra-error-1"
    assert noop.set_aside[0].reason == "the substrate did not start"
    assert (tmp_path / noop.set_aside[0].run_dir / "evidence" / "timeline.json").is_file()  # kept


def test_retries_are_bounded_and_a_void_or_a_failure_is_never_retried(tmp_path, bundles):
    script = Script({"noop": ["infra_error", "infra_error", "infra_error"], "oracle": ["void"]})
    _, rows = _run(tmp_path, bundles[:1], script, retries=1)
    by_agent = {r.agent: r for r in rows}
    assert by_agent["noop"].status == "infra_error" and by_agent["noop"].attempts == 2
    assert by_agent["oracle"].status == "void" and by_agent["oracle"].attempts == 1
    assert [c[0] for c in script.calls].count("oracle") == 1 and [c[0] for c in script.calls].count("noop") == 2


def test_no_retry_when_the_policy_says_none(tmp_path, bundles):
    _, rows = _run(tmp_path, bundles[:1], Script({"noop": ["infra_error", "scored"]}), retries=0)
    assert next(r for r in rows if r.agent == "noop").status == "infra_error"


def test_a_stop_leaves_the_rest_and_does_not_record_the_interrupted_trial(tmp_path, bundles):
    stop = threading.Event()
    script = Script({"noop": ["interrupted"]}, stop=stop, stop_after=2)
    outcome, rows = _run(tmp_path, bundles[:1], script, k=3, stop=stop)
    assert len(script.calls) == 2  # oracle #1, then noop #1, interrupted by the stop
    assert [(r.agent, r.trial) for r in rows] == [("oracle", 1)]
    assert outcome.left == 5 and not outcome.complete
