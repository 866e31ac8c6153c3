"""Runner benchmark: provisioning time, episode overhead beyond the plan's scheduled windows, and
qualification wall time per variant at time scale 0.1.

    .venv/bin/python bench/episode.py

Figures are recorded in docs/performance.md. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
SCALE = 0.1


def main() -> None:
    from arenac.pipeline import compile_paths, write_bundles
    from arenac.runner.bundle import open_bundle
    from arenac.runner.options import EpisodeOptions
    from arenac.runner.qualify import qualify
    from arenac.runner.trial import run_episode
    from arenac.substrate.spine.local_config import spine_spec
    from arenac.substrate.spine.stack import SpineStack

    with tempfile.TemporaryDirectory(prefix="arenac-bench-") as scratch:
        scratch = Path(scratch)
        written = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), scratch / "bundles")
        # the confined variant (runtime layer, admin API and database role): CI's sample too; chosen by its
        # access, as a variant id changes with every change to the substrate's chart
        bundle = open_bundle(next(w.path for w in written
                                  if json.loads((w.path / "plan.json").read_text())["access"]["name"] == "confined"))

        provisioning = []
        for attempt in range(3):
            start = time.perf_counter()
            stack = SpineStack(scratch / f"stack-{attempt}", spine_spec(bundle.directory, SCALE))
            stack.start()
            provisioning.append(time.perf_counter() - start)
            stack.stop()
        print(f"provisioning (chart rendered with Helm + fresh spine to ready): median "
              f"{statistics.median(provisioning):.2f} s, runs {', '.join(f'{p:.2f}' for p in provisioning)}")

        result = run_episode(bundle, EpisodeOptions(agent="oracle", time_scale=SCALE, out=scratch / "run"))
        timeline = json.loads((scratch / "run" / "evidence" / "timeline.json").read_text())
        challenges = json.loads((scratch / "run" / "evidence" / "challenges.json").read_text())
        last = max([timeline["soak_end_s"]] + [w["end_s"] for k, w in challenges.items() if k.startswith("after_")])
        scheduled = last * SCALE
        print(f"episode (oracle, time scale {SCALE:g}): {result.status}, reward {result.reward}; wall "
              f"{result.wall_s:.1f} s, of which scheduled windows {scheduled:.1f} s -> overhead "
              f"{result.wall_s - scheduled:.1f} s (provisioning, load generator start and drain, teardown, grading)")

        start = time.perf_counter()
        report = qualify([bundle], 1, SCALE, scratch / "qualification")
        print(f"qualification of one variant (3 controls, k=1, time scale {SCALE:g}): "
              f"{time.perf_counter() - start:.1f} s, ok={report.ok}")


if __name__ == "__main__":
    main()
