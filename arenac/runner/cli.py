"""The runner's commands (`arenac run`, `arenac qualify`): options in, a table and exit code out.

Ctrl-C or SIGTERM sets the stop event; every episode then tears down what it started.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from arenac.runner import adversaries
from arenac.runner.agents import AgentSpec, agent_account
from arenac.runner.bundle import BundleRefused, open_bundle
from arenac.runner.capacity import jobs_warning, measure_capacity
from arenac.runner.episode import EpisodeOptions
from arenac.runner.lifetime import RunnerCgroups, reap_dead_runners
from arenac.runner.preflight import command_problem
from arenac.runner.progress import Progress
from arenac.runner.qualify import qualify
from arenac.runner.state import StateDir
from arenac.runner.worker import run_in_worker
from arenac.sandbox import SandboxUnavailable, probe

if TYPE_CHECKING:
    from arenac.model.report import AdversariesReport, QualificationReport

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def handler(signum, _frame):
        print(f"arenac: {signal.Signals(signum).name}: stopping and tearing down", file=sys.stderr)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def _reap() -> None:
    for line in reap_dead_runners() + StateDir.default().reap():
        print(f"arenac: reaped what an earlier runner left: {line}", file=sys.stderr)


class _Launcher:
    """Runs each episode in a worker process bound to the kernel by a cgroup (lifetime.py), or
    bound by records only where no cgroup can be had (the timeline says which)."""

    def __init__(self) -> None:
        self.cgroups, self.reason = RunnerCgroups.open(StateDir.default().root)

    def __call__(self, bundle, options, stop):
        return run_in_worker(bundle.directory, options, stop, self.cgroups, self.reason)


def _warn_isolation() -> None:
    if agent_account() is None:
        print("arenac: warning: not running as root, so the agent runs as this user: isolation from the "
              "run directory and the harness is reduced", file=sys.stderr)


def _check_sandbox(isolation) -> bool:
    """A sandbox asked for by name that cannot be had is a refusal; `auto` without one warns."""
    try:
        choice = probe(isolation.sandbox)
    except SandboxUnavailable as error:
        print(f"arenac: refusing to run: --sandbox {isolation.sandbox}: {error}", file=sys.stderr)
        return False
    if choice.mechanism == "none" and isolation.sandbox == "auto":
        print(f"arenac: warning: the agent runs without a sandbox ({choice.reason}): it can see this machine's "
              "files and processes that file modes do not hide; verdicts record this", file=sys.stderr)
    return True


def _prepare(bundle_dirs: list[str], isolation):
    """Open every bundle (refusing tampered ones), check the sandbox, reap leftovers, arm the signal
    handlers. Returns (bundles, stop event), or None after a refusal was reported."""
    if not _check_sandbox(isolation):
        return None
    bundles = []
    for directory in bundle_dirs:
        try:
            bundles.append(open_bundle(Path(directory)))
        except BundleRefused as error:
            print(f"arenac: refusing to run: {error}", file=sys.stderr)
            return None
    _reap()
    _warn_isolation()
    return bundles, _stop_on_signals()


def warn_capacity(jobs: int, out: Path) -> None:
    """One line on stderr when `jobs` episodes side by side exceed what a short calibration says
    this machine holds (capacity.py); never a refusal."""
    warning = jobs_warning(jobs, measure_capacity(out))
    if warning:
        print(warning, file=sys.stderr)


def check_agent(agent: str) -> str | None:
    """Why AGENT names no agent, or a `cmd:` agent whose program cannot start (preflight.py),
    checked before anything starts; or None."""
    try:
        spec = AgentSpec.parse(agent, Path("solve.sh"))
    except ValueError as error:
        return str(error)
    return command_problem(spec.command) if spec.name == "cmd" else None


def check_strategies(names: list[str]) -> str | None:
    for name in names:
        try:
            adversaries.resolve(name, Path("solve.sh"))
        except adversaries.UnknownStrategy as error:
            return str(error)
    return None


def run_command(bundle_dir: str, agent: str, time_scale: float, out: str | None, healthy: bool, isolation) -> int:
    problem = check_agent(agent)
    if problem:
        print(f"arenac: {problem}", file=sys.stderr)
        return EXIT_USAGE
    prepared = _prepare([bundle_dir], isolation)
    if prepared is None:
        return EXIT_REFUSED
    (bundle,), stop = prepared
    run_dir = Path(out or f"runs/{bundle.plan.variant}")
    launch = _Launcher()
    with Progress(run_dir):
        result = launch(bundle, EpisodeOptions(agent=agent, time_scale=time_scale, out=run_dir,
                                               inject_faults=not healthy, isolation=isolation), stop)
    why = f" ({result.reason})" if result.reason and result.status != "scored" else ""
    print(f"{bundle.plan.variant}: {result.status}{why}, reward {result.reward} (outcome {result.outcome}, "
          f"safe repair {result.safe_repair}), {result.wall_s:.1f} s -> {run_dir}")
    return EXIT_OK if result.status != "infra_error" else EXIT_FAILED


def qualify_command(bundle_dirs: list[str], k: int, time_scale: float, out: str, jobs: int, isolation,
                    adversarial: bool = False, adversary_k: int = 1, strategies: tuple[str, ...] = ()) -> int:
    problem = check_strategies(list(strategies)) if adversarial else None
    if problem:
        print(f"arenac: {problem}", file=sys.stderr)
        return EXIT_USAGE
    prepared = _prepare(bundle_dirs, isolation)
    if prepared is None:
        return EXIT_REFUSED
    bundles, stop = prepared
    warn_capacity(jobs, Path(out))

    def progress(run) -> None:
        mark = "ok " if run.satisfied else "BAD"
        took = f"reused ({run.result.wall_s:.1f} s when it ran)" if run.reused else f"{run.result.wall_s:.1f} s"
        print(f"  {mark} {run.bundle.plan.variant} {run.control}#{run.index + 1}: {run.result.status}, "
              f"reward {run.result.reward}, {took}", flush=True)

    report = qualify(bundles, k, time_scale, Path(out), jobs, stop, progress, adversarial=adversarial,
                     adversary_k=adversary_k, strategies=list(strategies) or None, isolation=isolation,
                     launch=_Launcher())
    _print_table(report)
    return EXIT_OK if report.ok else EXIT_FAILED


def _print_table(report: QualificationReport) -> None:
    adversarial = report.adversary_k is not None
    table = Table(title=f"qualification (k={report.k}, time scale {report.time_scale:g}"
                  + (f", adversaries k={report.adversary_k})" if adversarial else ")"))
    for column in ("variant", "cell", "healthy", "noop", "oracle") + (("adversaries",) if adversarial else ()) \
            + ("qualified",):
        table.add_column(column)
    for variant in report.variants:
        cells = []
        for control in ("healthy", "noop", "oracle"):
            runs = variant.controls[control].runs
            cells.append(("ok " if variant.controls[control].ok else "NO ")
                         + " ".join(f"{r.reward}" if r.status == "scored" else r.status for r in runs))
        if variant.adversaries is not None:
            cells.append(adversary_cell(variant.adversaries))
        cell = ", ".join(f"{k}={v}" for k, v in variant.coordinates.items())
        table.add_row(variant.variant, cell, *cells, "yes" if variant.ok else "NO")
    Console(width=200 if adversarial else 160).print(table)
    episodes = report.episodes
    unscored = episodes.void + episodes.infra_error
    print(f"episodes: {episodes.total} ({episodes.scored} scored, {episodes.failed} failed, "
          f"{episodes.void} void, {episodes.infra_error} infra_error: {unscored / max(1, episodes.total):.0%} "
          f"not scored) in {report.wall_s:.0f} s, {report.jobs} side by side"
          + (f", {report.reused} reused from an earlier run" if report.reused else ""))
    print(f"ok: {report.ok}")


def adversary_cell(summary: AdversariesReport) -> str:
    """`adv 13/14; PASSED: a, b; fix-now failed; not scored: c` (met/total, then what went wrong)."""
    parts = [f"adv {summary.met}/{summary.total}"]
    if summary.passing:
        parts.append("PASSED: " + ", ".join(summary.passing))
    parts += [f"{name} failed" for name in summary.failed_controls]
    if summary.unscored:
        parts.append("not scored: " + ", ".join(summary.unscored))
    return "; ".join(parts)
