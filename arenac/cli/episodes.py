"""The episodes of `arenac run` and `arenac qualify`, once their input was checked (arenac/cli/runs.py):
open the bundles, run, print the result line or the qualification table, and the exit code.

Contract: `run_command` returns 0 when the run passed (scored, reward 1), 1 for a scored failure
(reward 0, or a harness step the agent broke: `failed`), 4 when it was void, 5 for an
infra_error, and prints the failing checks under its result line (docs/runner.md, "Exit codes");
`qualify_command` 0 when every variant qualified, 1 otherwise. Both: 2 for an agent or strategy
that names nothing, 3 when the runner refused to start (`arenac: refusing to run: ...`: a
tampered bundle, a sandbox that cannot be had). This module imports the runner's episode
machinery, so it is imported only by those two commands.
"""

from __future__ import annotations

import sys
from pathlib import Path

from arenac.cli.qualify_table import print_table, progress_line
from arenac.runner.launch import Launcher, RunRefused, check_agent, check_strategies, prepare, run_one, warn_capacity
from arenac.runner.options import EpisodeOptions, EpisodeResult
from arenac.runner.qualify import qualify
from arenac.verify.verdict import recorded_failing_lines

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_VOID, EXIT_INFRA_ERROR = 0, 1, 2, 3, 4, 5


def run_exit_code(result: EpisodeResult) -> int:
    """The exit code of one run (the module's contract)."""
    if result.status == "scored":
        return EXIT_OK if result.reward == 1 else EXIT_FAILED
    return {"failed": EXIT_FAILED, "void": EXIT_VOID}.get(result.status, EXIT_INFRA_ERROR)


def run_command(bundle_dir: str, agent: str, time_scale: float, out: str | None, healthy: bool, isolation,
                cluster=None) -> int:
    problem = check_agent(agent)
    if problem:
        print(f"arenac: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        (bundle,), stop = prepare([bundle_dir], isolation, cluster=cluster)
    except RunRefused as error:
        print(f"arenac: refusing to run: {error}", file=sys.stderr)
        return EXIT_REFUSED
    run_dir = Path(out or f"runs/{bundle.plan.variant}")
    result = run_one(bundle, EpisodeOptions(agent=agent, time_scale=time_scale, out=run_dir,
                                            inject_faults=not healthy, isolation=isolation, cluster=cluster),
                     stop)
    why = f" ({result.reason})" if result.reason and result.status != "scored" else ""
    print(f"{bundle.plan.variant}: {result.status}{why}, reward {result.reward} (outcome {result.outcome}, "
          f"safe repair {result.safe_repair}), {result.wall_s:.1f} s -> {run_dir}")
    for line in recorded_failing_lines(run_dir):
        print(line)
    return run_exit_code(result)


def qualify_command(bundle_dirs: list[str], k: int, time_scale: float, out: str, jobs: int, isolation,
                    adversarial: bool = False, adversary_k: int = 1, strategies: tuple[str, ...] = (),
                    retries: int = 1, cluster=None) -> int:
    problem = check_strategies(list(strategies)) if adversarial else None
    if problem:
        print(f"arenac: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        bundles, stop = prepare(bundle_dirs, isolation, cluster=cluster)
    except RunRefused as error:
        print(f"arenac: refusing to run: {error}", file=sys.stderr)
        return EXIT_REFUSED
    warn_capacity(jobs, Path(out), cluster, bundles)
    report = qualify(bundles, k, time_scale, Path(out), jobs, stop, progress_line, adversarial=adversarial,
                     adversary_k=adversary_k, strategies=list(strategies) or None, isolation=isolation,
                     launch=Launcher(), retries=retries, cluster=cluster)
    print_table(report)
    return EXIT_OK if report.ok else EXIT_FAILED
