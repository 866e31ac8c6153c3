"""Qualification: prove a variant sound by running its controls k times each.

    healthy  no fault, the no-op agent        must pass (reward 1)
    noop     the faults, the no-op agent      must fail (reward 0, and scored: the fault manifested)
    oracle   the faults, the golden fix       must pass

A void or infrastructure-failed run never satisfies an expectation. Results go to
`qualification.json` with a top-level "ok".
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from arenac.runner.bundle import RunnableBundle
from arenac.runner.episode import EpisodeOptions, EpisodeResult, run_episode
from arenac.runner.records import write_json

CONTROLS: tuple[tuple[str, str, bool, str], ...] = (
    # name, agent, inject faults, expected
    ("healthy", "noop", False, "pass"),
    ("noop", "noop", True, "fail"),
    ("oracle", "oracle", True, "pass"),
)


@dataclass(frozen=True)
class ControlRun:
    bundle: RunnableBundle
    control: str
    index: int
    result: EpisodeResult

    @property
    def satisfied(self) -> bool:
        expected = next(c[3] for c in CONTROLS if c[0] == self.control)
        if self.result.status != "scored":
            return False
        return (self.result.reward == 1) == (expected == "pass")


def qualify(bundles: list[RunnableBundle], k: int, time_scale: float, out: Path, jobs: int = 1,
            stop: threading.Event | None = None, on_result=None) -> dict:
    stop = stop or threading.Event()
    work = [(bundle, control, index) for bundle in bundles for control in CONTROLS for index in range(k)]

    def one(item) -> ControlRun:
        bundle, (name, agent, inject, _), index = item
        run_dir = out / bundle.plan.task / bundle.plan.variant / f"{name}-{index + 1}"
        options = EpisodeOptions(agent=agent, time_scale=time_scale, out=run_dir, inject_faults=inject)
        run = ControlRun(bundle, name, index, run_episode(bundle, options, stop))
        if on_result is not None:
            on_result(run)
        return run

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs = list(pool.map(one, work))
    report = {"ok": all(r.satisfied for r in runs), "k": k, "time_scale": time_scale, "variants": []}
    for bundle in bundles:
        controls = {}
        for name, _, _, expected in CONTROLS:
            mine = [r for r in runs if r.bundle is bundle and r.control == name]
            controls[name] = {
                "expected": expected,
                "ok": all(r.satisfied for r in mine),
                "runs": [{"status": r.result.status, "reward": r.result.reward, "outcome": r.result.outcome,
                          "safe_repair": r.result.safe_repair, "wall_s": r.result.wall_s,
                          "run_dir": r.result.out.relative_to(out).as_posix()} for r in mine],
            }
        report["variants"].append({"task": bundle.plan.task, "variant": bundle.plan.variant,
                                   "coordinates": bundle.plan.coordinates, "controls": controls,
                                   "ok": all(c["ok"] for c in controls.values())})
    write_json(out / "qualification.json", report)
    return report
