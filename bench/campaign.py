"""Campaign benchmark: trials per hour at time scale 0.1 for `--jobs` 1, 2, 3 and 4, with the share of
void and infra_error trials at each, and the report's time for 1,000 trials.

    .venv/bin/python bench/campaign.py [--jobs 1 2 3 4] [--k 1] [--keep DIR]

Each level runs the same real campaign with `arenac campaign FILE --jobs J` as a new process (the
command an operator types): the oracle and the no-op agent on every variant of revoked-grant and
statement-timeout (two tasks, four variants), k times each, under the machine's live lock
(`/tmp/arenac-live.lock`, tests/livelock.py) so nothing else's episodes compete. Per level it
prints the wall time, trials per hour (trials with a result / wall) and scored trials per hour (the
ones that count), how many trials ended void or infra_error and how many attempts were set aside
as infra errors and run again (`retries`, default 1): on 2 cores, episodes side by side compete
for them, and a trial the machine's load spoilt is a harness failure, not a result, so the share
is part of the figure. The oracle's pass share says whether the verdicts held under that load.

Then the report: `bench/report.py --runs 1` times `arenac report` on 1,000 synthetic trials (target:
under 5 s). Figures and the command are recorded in docs/performance.md ("Campaigns").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # livelock: the lock the test suite's episodes take
SCALE = 0.1
TASKS = ("revoked-grant", "statement-timeout")
AGENTS = {"oracle": "oracle", "noop": "noop"}


def campaign_file(directory: Path, k: int) -> Path:
    """The campaign every level runs (absolute paths, so it runs from anywhere)."""
    path = directory / "bench.toml"
    variants = "\n".join(f'[[variants]]\npath = "{ROOT / "tasks" / f"{task}.arena"}"\n' for task in TASKS)
    agents = "\n".join(f'{name} = "{spec}"' for name, spec in AGENTS.items())
    path.write_text(f"k = {k}\ntime_scale = {SCALE}\nretries = 1\n\n[agents]\n{agents}\n\n{variants}",
                    encoding="utf-8")
    return path


def run_level(file: Path, out: Path, jobs: int) -> str:
    """One campaign at `jobs` side by side; its figures as one table row."""
    from arenac.campaign.store import CampaignStore

    arenac = Path(sys.executable).with_name("arenac")
    start = time.perf_counter()
    finished = subprocess.run([str(arenac), "campaign", str(file), "--out", str(out), "--jobs", str(jobs)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if finished.returncode not in (0, 1):
        raise SystemExit(f"arenac campaign --jobs {jobs} exited {finished.returncode}:\n{finished.stderr}")
    store = CampaignStore.open(out)
    try:
        rows = store.rows()
    finally:
        store.close()
    status = Counter(row.status for row in rows)
    set_aside = sum(len(row.set_aside) for row in rows)
    oracle = [row for row in rows if row.agent == "oracle" and row.status == "scored"]
    oracle_passed = sum(row.reward for row in oracle)
    trials = len(rows)
    return (f"| {jobs} | {trials} | {wall:.0f} | {trials / wall * 3600:.0f} | {status['scored'] / wall * 3600:.0f} | "
            f"{status['void']} ({status['void'] / trials:.0%}) | "
            f"{status['infra_error']} ({status['infra_error'] / trials:.0%}) | {set_aside} | "
            f"{oracle_passed}/{len(oracle)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--k", type=int, default=1, help="trials of each agent on each variant (default 1)")
    parser.add_argument("--keep", type=Path, help="keep the campaign directories under this directory")
    options = parser.parse_args()
    from livelock import live_lock

    if options.keep and any((options.keep / f"jobs-{jobs}").exists() for jobs in options.jobs):
        # `arenac campaign` would resume the trials recorded there and the wall time would measure nothing
        raise SystemExit(f"{options.keep} already holds a jobs-N campaign: give an empty directory")
    with tempfile.TemporaryDirectory(prefix="arenac-bench-campaign-") as scratch:
        parent = options.keep or Path(scratch)
        parent.mkdir(parents=True, exist_ok=True)
        file = campaign_file(Path(scratch), options.k)
        print(f"campaign: agents {', '.join(AGENTS)} on {', '.join(TASKS)} (every variant), k={options.k}, "
              f"time scale {SCALE}")
        print("| jobs | trials | wall s | trials/hour | scored/hour | void | infra_error | attempts set aside | "
              "oracle passed |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        with live_lock():
            for jobs in options.jobs:
                print(run_level(file, parent / f"jobs-{jobs}", jobs), flush=True)
    report = subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--runs", "1"],
                            capture_output=True, text=True, check=True)
    print("report of 1,000 trials (bench/report.py --runs 1):")
    print(report.stdout.rstrip())


if __name__ == "__main__":
    main()
