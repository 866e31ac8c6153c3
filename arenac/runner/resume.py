"""Resuming a qualification: a run directory that already holds this very episode, complete, stands
for it; every other one is run again.

Contract:
- `decide(run_dir, bundle, agent, inject_faults, time_scale, backend) -> Decision`. `Decision.result` is the
  recorded `EpisodeResult` when, and only when, all of these hold:
  * complete: no INCOMPLETE marker (rundir.py), and run.json, evidence/timeline.json, verdict.json
    and reward.json are all there and of their documented shapes, run.json with its wall time;
  * the same episode: run.json names this bundle (its variant id and its bundle digest, so a
    recompiled bundle that changed anything is run again), this agent, the same fault injection
    (the healthy control injects none), the same time scale and the same backend (`local` or
    `kubernetes`: a cluster's run does not stand for a local one); the verdict names the variant;
  * consistent: the verdict's status is the timeline's, and reward.json agrees with the verdict;
  * not interrupted: a run that ended as infra_error with the reason "interrupted" (Ctrl-C or
    SIGTERM stopped it) is run again; any other recorded result, infra_error included, stands.
  Otherwise `result` is None and `reason` says why; the caller runs the episode, and run_episode
  replaces the directory's earlier run (records.begin_run deletes its entries: nothing is moved
  aside).
- The reused result: status from the timeline, reward/outcome/safe_repair from reward.json,
  wall_s from run.json (the real time the episode took when it ran).
- It only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from arenac.model.evidence import Timeline
from arenac.model.verdict import Reward, Verdict
from arenac.rundir import incomplete_reason
from arenac.runner.options import EpisodeResult
from arenac.runner.records import read_run_record
from arenac.verify.evidence import EvidenceError, read_model


@dataclass(frozen=True)
class Decision:
    result: EpisodeResult | None  # the recorded result to reuse, or None: run the episode again
    reason: str  # why (for a reuse: "complete")


def decide(run_dir: Path, bundle, agent: str, inject_faults: bool, time_scale: float,
           backend: str = "local") -> Decision:
    def again(reason: str) -> Decision:
        return Decision(None, reason)

    if not run_dir.is_dir():
        return again("no run directory")
    problem = incomplete_reason(run_dir)
    if problem:
        return again(problem)
    record = read_run_record(run_dir)
    if record is None:
        return again("no readable run.json")
    expected = {"variant": bundle.plan.variant, "bundle_digest": bundle.bundle_digest, "agent": agent,
                "inject_faults": inject_faults, "time_scale": time_scale, "backend": backend}
    for field, value in expected.items():
        if getattr(record, field) != value:
            return again(f"run.json records {field} {getattr(record, field)!r}, this episode has {value!r}")
    if record.wall_s is None:
        return again("run.json has no wall time: the episode did not finish")
    try:
        timeline = read_model(run_dir / "evidence" / "timeline.json", Timeline, "evidence/timeline.json")
        verdict = read_model(run_dir / "verdict.json", Verdict, "verdict.json")
        reward = read_model(run_dir / "reward.json", Reward, "reward.json")
    except EvidenceError as error:
        return again(str(error))
    if verdict.variant != bundle.plan.variant:
        return again(f"verdict.json is of variant {verdict.variant!r}")
    if verdict.status != timeline.status:
        return again(f"verdict.json says {verdict.status}, the timeline {timeline.status}")
    if reward != verdict.reward_record():
        return again("reward.json disagrees with verdict.json")
    if timeline.status == "infra_error" and timeline.void_reason == "interrupted":
        return again("it was interrupted")
    return Decision(EpisodeResult(run_dir, timeline.status, reward.reward, reward.outcome, reward.safe_repair,
                                  record.wall_s, timeline.void_reason or ""), "complete")


def recorded_result(run_dir: Path, bundle, agent: str, inject_faults: bool, time_scale: float,
                    backend: str = "local") -> EpisodeResult | None:
    """The result to reuse for this episode, or None: run it (see `decide`)."""
    return decide(run_dir, bundle, agent, inject_faults, time_scale, backend).result
