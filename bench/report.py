"""Report benchmark: `arenac report` on a synthetic campaign of 1,000 trials built from recorded
evidence (no episode), in process and as a command, with --plots 0 and the default (50).

    .venv/bin/python bench/report.py [--trials 1000] [--runs 3] [--profile]

The campaign: 4 agents x 25 tasks x 10 trials, each trial a copy (hard links) of one of five
graded run directories made once by tests/helpers/report_runs.py (a pass, a failure that changed
nothing, a failure that made the full fix, a void, an infra_error), drawn with a fixed seed at a
rate per agent; its results.sqlite holds one row per trial with the taxonomy's analysis, as
`arenac campaign` records it. It is built under build/ (on this machine /tmp charges far more
per file created) and removed at the end.

Prints, per plot limit, the best and median wall and CPU seconds of `collect` + `write_report`
in process and of `arenac report DIR -o OUT --plots N` as a new process (its CPU from the
children's rusage), and the size of report.html; `--profile` adds the cProfile top of one
in-process report with the default plots. The target is under 5 s for 1,000 trials. Figures are
recorded in docs/performance.md ("Reports").
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # helpers.report_runs and the recorded evidence it edits
OUT_PARENT = ROOT / "build"

AGENTS = {"oracle": 0.95, "agent-a": 0.6, "agent-b": 0.35, "noop": 0.0}  # the chance of a pass
TASKS = 25
KINDS = ("pass", "fail", "fail_fixed", "void", "infra_error")
PLOT_LIMITS = (0, 50)


def build_campaign(directory: Path, trials: int) -> dict[str, int]:
    """The synthetic campaign at `directory`; how many trials of each kind it holds."""
    from arenac.campaign.store import CampaignStore
    from arenac.model.campaign import TrialRow
    from helpers.report_runs import campaign_row, graded_run, variant_of

    templates = directory / "templates"
    rows: dict[str, TrialRow] = {}
    for kind in KINDS:
        verdict = graded_run(templates / kind, kind)
        rows[kind] = campaign_row(directory, Path("templates") / kind, verdict, agent="oracle", task="recorded",
                                  trial=1)
    k = max(1, trials // (len(AGENTS) * TASKS))
    draw = random.Random(7)
    counts = dict.fromkeys(KINDS, 0)
    store = CampaignStore.open(directory)
    try:
        made = 0
        for task_index in range(TASKS):
            for agent, pass_rate in AGENTS.items():
                for trial in range(1, k + 1):
                    if made == trials:
                        break
                    roll = draw.random()
                    kind = ("void" if roll < 0.03 else "infra_error" if roll < 0.05 else
                            "pass" if draw.random() < pass_rate else
                            "fail_fixed" if agent != "noop" and draw.random() < 0.4 else "fail")
                    task = f"task-{task_index:02d}"
                    run_dir = Path("runs") / agent / task / variant_of(task) / f"trial-{trial}"
                    shutil.copytree(templates / kind, directory / run_dir, copy_function=os.link)
                    store.record(rows[kind].model_copy(update={
                        "agent": agent, "agent_spec": agent, "task": task, "variant": variant_of(task),
                        "trial": trial, "run_dir": run_dir.as_posix()}))
                    counts[kind] += 1
                    made += 1
    finally:
        store.close()
    return counts


def in_process(directory: Path, out: Path, plots: int) -> tuple[float, float, int]:
    from arenac.report.collect import collect
    from arenac.report.write import write_report

    wall, cpu = time.perf_counter(), time.process_time()
    write_report(collect(directory, plots), out)
    return time.perf_counter() - wall, time.process_time() - cpu, (out / "report.html").stat().st_size


def as_command(directory: Path, out: Path, plots: int) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-m", "arenac.cli", "report", str(directory), "-o", str(out), "--plots",
                    str(plots)], check=True, capture_output=True)
    elapsed = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, (out / "report.html").stat().st_size


def show(label: str, figures: list[tuple[float, float, int]]) -> None:
    walls, cpus = [f[0] for f in figures], [f[1] for f in figures]
    print(f"{label}: wall best {min(walls):.2f} s, median {statistics.median(walls):.2f} s; "
          f"CPU best {min(cpus):.2f} s, median {statistics.median(cpus):.2f} s; "
          f"report.html {figures[-1][2] / 2**20:.2f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    OUT_PARENT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT_PARENT, prefix=".bench-report-") as scratch:
        directory = Path(scratch) / "campaign"
        start = time.perf_counter()
        counts = build_campaign(directory, options.trials)
        print(f"campaign: {sum(counts.values())} trials ({', '.join(f'{n} {kind}' for kind, n in counts.items())}) "
              f"of {len(AGENTS)} agents on {TASKS} tasks, built in {time.perf_counter() - start:.1f} s")
        for plots in PLOT_LIMITS:
            show(f"in process, --plots {plots}",
                 [in_process(directory, Path(scratch) / f"in-{plots}-{n}", plots) for n in range(options.runs)])
            show(f"arenac report (new process), --plots {plots}",
                 [as_command(directory, Path(scratch) / f"cmd-{plots}-{n}", plots) for n in range(options.runs)])
        first, again = Path(scratch) / "in-50-0", Path(scratch) / f"cmd-50-{options.runs - 1}"
        same = all((first / name).read_bytes() == (again / name).read_bytes()
                   for name in ("report.html", "junit.xml", "results.json", "trials.csv"))
        print(f"the in-process and the command's files are byte-identical: {same}")
        if options.profile:
            profile = cProfile.Profile()
            profile.enable()
            in_process(directory, Path(scratch) / "profiled", 50)
            profile.disable()
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
