"""The runner's commands: `arenac run`, `arenac qualify` and `arenac adversaries`.

Contract: bad input (an option value, a missing argument or bundle, an `--out` holding other
things, an unknown agent or strategy) is refused as one line `arenac: ...` on stderr with exit 2,
before anything is started or compiled (docs/runner.md, Refusals); a bundle that fails its
manifest or a sandbox that cannot be had is `arenac: refusing to run: ...`, exit 3. The episode
machinery is imported only inside `run` and `qualify` (arenac/cli/episodes.py), so that `arenac
check` never loads it; the option types and the suite's names are light.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arenac.cli.common import build_or_exit, compile_or_exit, refuse
from arenac.cli.runner_options import (
    RunnerCommand,
    backend_options,
    cluster_problem,
    cluster_target,
    isolation,
    isolation_options,
)
from arenac.extras import require_local
from arenac.runner import preflight  # light (no runner machinery): option types and refusals
from arenac.runner.adversaries import STRATEGIES  # light: the suite's names and descriptions


@click.command(cls=RunnerCommand)
@click.argument("bundle", type=click.Path(file_okay=False, exists=True))
@click.option("--agent", default="oracle", show_default=True,
              help='oracle, noop, adversary:NAME (the built-in suite: see `arenac adversaries`), or cmd:"PROGRAM ARGS"')
@click.option("--time-scale", type=preflight.TimeScale(), default=1.0, show_default=True,
              help="Compress every duration (a finite number above 0).")
@click.option("--out", default=None, help="Run directory (default: runs/<variant>); an earlier run there is replaced.")
@click.option("--healthy", is_flag=True, help="Run without injecting the faults (the healthy control).")
@isolation_options
@backend_options
def run(bundle, agent, time_scale, out, healthy, sandbox, agent_network, agent_ro, backend, kubeconfig, context):
    """Run one episode of a compiled bundle, on this machine or on a cluster, and grade it.

    Exit 0: passed; 1: a scored failure; 4: void; 5: infra_error (docs/runner.md)."""
    require_local("run")  # the local extra first: one line, not an ImportError
    from arenac.cli.episodes import run_command  # lazily: the runner's imports are heavy (`run` only)

    run_dir = Path(out) if out else preflight.default_run_dir(bundle)
    kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
    problem = (preflight.run_out_problem(run_dir) if run_dir is not None else None) or cluster_problem(
        backend, kubeconfig, context)
    if problem:
        refuse(problem)
    sys.exit(run_command(bundle, agent, time_scale, out, healthy, isolation(sandbox, agent_network, agent_ro),
                         cluster_target(backend, kubeconfig, context)))


@click.command(cls=RunnerCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-k", "repeats", type=click.IntRange(min=1), default=1, show_default=True, help="Runs per control.")
@click.option("--time-scale", type=preflight.TimeScale(), default=1.0, show_default=True,
              help="Compress every duration (a finite number above 0).")
@click.option("--out", default="qualification", show_default=True,
              help="Output directory; rerun with the same one to resume (complete episodes are reused).")
@click.option("--jobs", type=preflight.Jobs(), default=1, show_default=True,
              help=f"Episodes run side by side (at most {preflight.MAX_JOBS_PER_CPU} per CPU).")
@click.option("--adversarial", is_flag=True, help="Also run every strategy of the built-in adversarial suite.")
@click.option("--adversary", "strategies", multiple=True, metavar="NAME",
              help="Run only this strategy of the suite (repeatable; implies --adversarial).")
@click.option("--adversary-k", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs per adversarial strategy (-k is for the three controls).")
@click.option("--retries", type=click.IntRange(min=0), default=1, show_default=True,
              help="Times an episode whose harness was overloaded (infra_error) runs again.")
@isolation_options
@backend_options
def qualify(paths, repeats, time_scale, out, jobs, adversarial, strategies, adversary_k, retries, sandbox,
            agent_network, agent_ro, backend, kubeconfig, context):
    """Qualify variants: healthy control passes, no-op fails, oracle passes (each k times).

    With --adversarial, every strategy of the built-in suite must fail on every variant and the
    fix-now control must pass; a variant with a passing adversary does not qualify. With --backend
    kubernetes, every control is a trial on that cluster (not the adversarial suite).

    PATHS are specs (compiled first, into OUT/build) or compiled bundle directories."""
    require_local("qualify")  # the local extra first: one line, not an ImportError
    from arenac.cli.episodes import qualify_command  # lazily: heavy (`qualify` only)
    from arenac.runner.launch import check_strategies

    adversarial = adversarial or bool(strategies)
    kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
    problem = (check_strategies(list(strategies)) or preflight.qualification_out_problem(Path(out))
               or _adversarial_on_cluster(adversarial, backend) or cluster_problem(backend, kubeconfig, context))
    if problem:  # before the specs are compiled into OUT/build
        refuse(problem)
    bundles = _bundles_for(paths, out)
    sys.exit(qualify_command(bundles, repeats, time_scale, out, jobs, isolation(sandbox, agent_network, agent_ro),
                             adversarial, adversary_k, strategies, retries,
                             cluster_target(backend, kubeconfig, context)))


def _adversarial_on_cluster(adversarial: bool, backend: str) -> str | None:
    if adversarial and backend == "kubernetes":
        # most strategies attack what the local backend exposes (its processes, ports, files): on a
        # cluster their defences are the cluster's, which no test here has seen (docs/kubernetes.md)
        return "--adversarial runs on the local backend only: qualify on a cluster runs the three controls"
    return None


@click.command()
def adversaries():
    """List the built-in adversarial strategies (`--agent adversary:NAME`, `qualify --adversarial`)."""

    width = max(len(s.name) for s in STRATEGIES)
    for strategy in STRATEGIES:
        key = "answer key" if strategy.answer_key else ""
        click.echo(f"{strategy.name:<{width}}  must {strategy.expected}  {key:<10}  {strategy.description}")


def _bundles_for(paths, out) -> list[str]:
    """Bundle directories: given directly, or compiled from the specs given."""
    bundles = [p for p in paths if (Path(p) / "manifest.json").is_file()]
    specs = [p for p in paths if p not in bundles]
    if specs:
        compilation = compile_or_exit(specs, "text")
        bundles += [w.path.as_posix() for w in build_or_exit(compilation, Path(out) / "build")]
    return bundles
