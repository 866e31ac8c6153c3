"""Slow leaks of the runner: many consecutive short episodes, and what the runner holds before and after.

    sudo .venv/bin/python bench/leaks.py [--episodes 200] [--time-scale 0.05]

Runs EPISODES episodes one after another through the same launcher `arenac run` and `qualify` use
(each in its worker process and cgroup), with an agent that declares at once, and prints, at the
start and every 20 episodes: the runner's open file descriptors, threads and resident memory, the
episode scratch directories left in the temp directory, the state directory's size and record
count, and the cgroup directories of the runner. Every figure must be flat. The statuses of the
episodes are counted too, with the reason of each one not scored (a leak that voids episodes is a
leak; a machine shared with other work shows as "harness overloaded").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psutil

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.bundle import open_bundle
from arenac.runner.launch import Launcher
from arenac.runner.lifetime import base_dir
from arenac.runner.options import EpisodeOptions
from arenac.runner.state import StateDir


def figures(launcher: Launcher) -> dict[str, float]:
    me = psutil.Process()
    state = StateDir.default().root
    state_files = [p for p in state.rglob("*") if p.is_file()]
    cgroups = list(launcher.cgroups.path.iterdir()) if launcher.cgroups is not None else []
    return {
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": me.num_threads(),
        "rss_mib": round(me.memory_info().rss / 2**20, 1),
        "scratch_dirs": len(list(Path(tempfile.gettempdir()).glob("arenac-episode-*"))),
        "state_kib": round(sum(p.stat().st_size for p in state_files) / 1024, 1),
        "state_records": len(state_files),
        "episode_cgroups": sum(1 for p in cgroups if p.is_dir()),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--time-scale", type=float, default=0.05)
    args = parser.parse_args()
    if base_dir() is None:
        print("note: no cgroup v2 here: episodes are bound by records only", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="arenac-leaks-") as work:
        bundle = open_bundle(write_bundles(compile_paths(["tasks/revoked-grant.arena"]), Path(work) / "b")[0].path)
        launcher = Launcher()
        stop = threading.Event()
        statuses: Counter[str] = Counter()
        why_not_scored: Counter[str] = Counter()  # the reason's first clause: "harness overloaded", ...
        rows = [(0, figures(launcher))]
        started = time.monotonic()
        for n in range(1, args.episodes + 1):
            options = EpisodeOptions(agent="cmd:declare_repair_complete", time_scale=args.time_scale,
                                     out=Path(work) / "runs" / f"episode-{n}")
            result = launcher(bundle, options, stop)
            statuses[result.status] += 1
            if result.status != "scored":
                why_not_scored[f"{result.status}: {result.reason.split(':')[0]}"] += 1
            if n % 20 == 0 or n == args.episodes:
                rows.append((n, figures(launcher)))
                print(f"{n} episodes, {time.monotonic() - started:.0f} s: {rows[-1][1]}", file=sys.stderr, flush=True)
    keys = list(rows[0][1])
    print("| episodes | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for n, row in rows:
        print(f"| {n} | " + " | ".join(str(row[k]) for k in keys) + " |")
    print(f"\nstatuses: {dict(statuses)}; not scored, by reason: {dict(why_not_scored)}; "
          f"wall {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
