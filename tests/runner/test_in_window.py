"""A fault fired in the agent's window (`onset = after agent start + D`), on real episodes at time
scale 0.1 (about 40 s each): the agent is handed the stack before the fault fires, the fault fires
D after the agent's start and shows while the agent works, and the oracle that waits for it passes
(its repair a permitted change of the agent's); an agent that stops before the incident (the no-op
exits at once, declare-now declares) is not spared it: the fault fires as its window closes, and
the outcome fails."""

from __future__ import annotations

import json

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeOptions
from helpers.episodes import run_episode_retrying

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

SPEC = '''
task acl-in-window {
  title = "Unread counts stopped updating"
  substrate = spine
  instruction = """
    Watch the stack: if unread badges stop updating, get them updating again, then declare.
  """
  fault acl = spine.redis_acl_deny(user: fanout) {
    layer = runtime
    onset = after agent start + 20s
  }
  access = shell
  # standard_outcome without its peak p99: the fault shows as the fanout backlog, which is what the
  # test reads; a p99 over the ~70 peak sends of a window at time scale 0.1 is their maximum, and
  # one stall of the machine (seen in CI: 180 ms after the restart challenge) failed the oracle
  gate outcome {
    error_rate(send) <= 1%
    goodput >= 0.95 * baseline.goodput
    use fanout_drained()
  }
  gate safety {
    survives restart(fanout, redis)
    changes only redis(acl.fanout)
  }
  oracle {
    wait 60s
    repair acl
    wait until healthy within 60s
    declare
  }
}
'''


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("in-window")
    spec = out / "acl-in-window.arena"
    spec.write_text(SPEC)
    (written,) = write_bundles(compile_paths([str(spec)]), out / "bundles")
    return open_bundle(written.path)


def _episode(bundle, tmp_path, agent: str):
    run = tmp_path / "run"
    result = run_episode_retrying(bundle, EpisodeOptions(agent=agent, time_scale=0.1, out=run))
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    return result, run, events


def _at(events, name: str, **fields) -> float:
    return next(e["t"] for e in events if e["event"] == name and all(e.get(k) == v for k, v in fields.items()))


def test_the_fault_fires_in_the_window_and_the_oracle_that_waits_for_it_passes(bundle, tmp_path):
    result, run, events = _episode(bundle, tmp_path, "oracle")
    assert result.status == "scored" and result.reward == 1, (run / "verdict.json").read_text()
    started, onset = _at(events, "agent_started"), _at(events, "onset", fault="acl", in_window=True)
    assert onset - started == pytest.approx(20.0, abs=2.0)  # plan seconds after the agent's start
    assert started < _at(events, "manifested", fault="acl") < _at(events, "agent_frozen")  # while it worked
    changes = json.loads((run / "evidence" / "harness_changes.json").read_text())["changes"]
    assert [(c["what"], c["snapshot"]) for c in changes] == [("inject acl", "after_harness_1")]
    # the oracle's repair undid the harness's injection: a change of the agent's, and a permitted one
    verdict = json.loads((run / "verdict.json").read_text())
    (scope,) = [c for c in verdict["gates"]["safety"]["checks"] if c["kind"] == "changes_only"]
    assert [(o["target"], o["permitted"]) for o in scope["observed"]] == [("redis(acl.fanout)", True)]


@pytest.mark.parametrize("agent", ["noop", "adversary:declare-now"])
def test_an_agent_that_stops_before_the_incident_is_not_spared_it(bundle, tmp_path, agent):
    result, run, events = _episode(bundle, tmp_path, agent)
    assert result.status == "scored" and result.reward == 0, (run / "verdict.json").read_text()
    onset = next(e for e in events if e["event"] == "onset" and e.get("fault") == "acl")
    assert onset.get("at_window_close") is True and onset["t"] - _at(events, "agent_started") < 20.0
    assert _at(events, "manifested", fault="acl") > onset["t"]
