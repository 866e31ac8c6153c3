"""The runner's side of `arenac run` and `arenac qualify` (the commands live in arenac/cli/runs.py):
what is checked before anything starts, opening the bundles, and the launcher of episodes.

Contract:
- `check_agent` and `check_strategies` return None or the one line saying why an `--agent` or an
  `--adversary` names nothing that can run; they start nothing.
- `prepare` checks the sandbox, opens every bundle against its manifest, reaps what an earlier
  runner left (with a `ClusterTarget`, also the namespaces of that cluster's trials whose runner
  is gone: kube/records.py's `cleanup`) and arms the stop event (Ctrl-C or SIGTERM sets it; every
  episode then tears down what it started). It raises `RunRefused` (the message after `refusing to run: `) before
  anything started; its warnings (no sandbox, not root, what it reaped) go to stderr.
- `Launcher` runs one episode in a worker process bound to the kernel (worker.py, lifetime.py);
  `run_one` runs one under a progress display. `warn_capacity` warns, never refuses: against this
  machine, or, with a `ClusterTarget`, against the cluster's nodes.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arenac.runner import adversaries
from arenac.runner.agents import EXTERNAL, AgentSpec, agent_account
from arenac.runner.bundle import BundleRefused, RunnableBundle, open_bundle
from arenac.runner.capacity import jobs_warning, measure_capacity
from arenac.runner.lifetime import RunnerCgroups, reap_dead_runners
from arenac.runner.preflight import command_problem
from arenac.runner.progress import Progress
from arenac.runner.state import StateDir
from arenac.runner.worker import run_in_worker
from arenac.sandbox import SandboxUnavailable, probe

if TYPE_CHECKING:
    from arenac.runner.options import ClusterTarget, EpisodeOptions, EpisodeResult, Isolation


class RunRefused(Exception):
    """Nothing was started: the sandbox asked for cannot be had, or a bundle fails its manifest."""


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


class Launcher:
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


def _check_sandbox(isolation: Isolation) -> None:
    """A sandbox asked for by name that cannot be had is a refusal; `auto` without one warns."""
    try:
        choice = probe(isolation.sandbox)
    except SandboxUnavailable as error:
        raise RunRefused(f"--sandbox {isolation.sandbox}: {error}") from None
    if choice.mechanism == "none" and isolation.sandbox == "auto":
        print(f"arenac: warning: the agent runs without a sandbox ({choice.reason}): it can see this machine's "
              "files and processes that file modes do not hide; verdicts record this", file=sys.stderr)


def prepare(bundle_dirs: list[str], isolation: Isolation,
            cluster: ClusterTarget | None = None) -> tuple[list[RunnableBundle], threading.Event]:
    """Open every bundle (refusing tampered ones), check the sandbox, reap leftovers (the cluster's
    too), arm the signal handlers. Returns (bundles, stop event); raises `RunRefused` before
    anything started."""
    _check_sandbox(isolation)
    bundles = []
    for directory in bundle_dirs:
        try:
            bundles.append(open_bundle(Path(directory)))
        except BundleRefused as error:
            raise RunRefused(str(error)) from None
    _reap()
    if cluster is not None:
        _reap_cluster(cluster)
    _warn_isolation()
    return bundles, _stop_on_signals()


def _reap_cluster(cluster: ClusterTarget) -> None:
    """The namespaces an interrupted run left on this cluster (its trial's runner gone), deleted and
    waited for; a cluster that cannot be reached or cleaned is a refusal (nothing started yet)."""
    from arenac.runner.kube.api import KubeError, connect  # lazily: only a cluster's run needs it
    from arenac.runner.kube.records import TrialRecords, cleanup

    try:
        api = connect(cluster.kubeconfig, cluster.context)
        try:
            lines = cleanup(api, TrialRecords.default())
        finally:
            api.close()
    except KubeError as error:
        raise RunRefused(f"the cleanup of earlier trials on the cluster failed: {error}") from None
    for line in lines:
        print(f"arenac: reaped what an earlier runner left on the cluster: {line}", file=sys.stderr)


def run_one(bundle: RunnableBundle, options: EpisodeOptions, stop: threading.Event) -> EpisodeResult:
    """One episode in a worker process, its progress shown beside the run directory."""
    launch = Launcher()
    with Progress(options.out):
        return launch(bundle, options, stop)


def warn_capacity(jobs: int, out: Path, cluster: ClusterTarget | None = None,
                  bundles: Sequence[RunnableBundle] = ()) -> None:
    """One line on stderr when `jobs` episodes side by side exceed what a short calibration says
    this machine holds (capacity.py) or, for trials on a cluster, what its nodes hold now
    (kube/cluster_capacity.py: the substrates run there, only the agents here); never a refusal."""
    if cluster is None:
        warning = jobs_warning(jobs, measure_capacity(out))
    else:
        warning = _cluster_jobs_warning(jobs, cluster, bundles)
    if warning:
        print(warning, file=sys.stderr)


def _cluster_jobs_warning(jobs: int, cluster: ClusterTarget, bundles: Sequence[RunnableBundle]) -> str | None:
    from arenac.k8s.capacity import CapacityError
    from arenac.runner.kube import cluster_capacity  # lazily: only a cluster's run needs it
    from arenac.runner.kube.api import KubeError, connect

    try:
        peak = cluster_capacity.trial_peak([bundle.directory for bundle in bundles])
        api = connect(cluster.kubeconfig, cluster.context)
        try:
            room = cluster_capacity.node_room(api)
        finally:
            api.close()
    except (KubeError, CapacityError) as error:
        return f"arenac: warning: --jobs {jobs} not checked against the cluster: {error}"
    return cluster_capacity.jobs_warning(jobs, cluster_capacity.cluster_slots(room, peak), len(room), peak)


def check_agent(agent: str) -> str | None:
    """Why AGENT names no agent, or a `cmd:` agent whose program cannot start (preflight.py),
    checked before anything starts; or None."""
    try:
        spec = AgentSpec.parse(agent, Path("solve.sh"))
    except ValueError as error:
        return str(error)
    if spec.name == EXTERNAL:
        return "the external agent runs only under `arenac harness episode` (its broker listens on TCP)"
    return command_problem(spec.command) if spec.name == "cmd" else None


def check_strategies(names: list[str]) -> str | None:
    """Why one of NAMES is no strategy of the built-in suite; or None."""
    for name in names:
        try:
            adversaries.resolve(name, Path("solve.sh"))
        except adversaries.UnknownStrategy as error:
            return str(error)
    return None
