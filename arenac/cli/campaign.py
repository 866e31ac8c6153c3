"""`arenac campaign FILE`: run a benchmark campaign (docs/campaign.md).

Contract: before anything starts, the campaign file is read and validated (every mistake as
`arenac: FILE:LINE:COLUMN: KEY: MESSAGE`, exit 2), every agent checked as `arenac run --agent`
checks it, `jobs` checked against the machine, `--out` checked (absent, empty, or a campaign
directory, which is then resumed), and the variants selected: each selector's path, relative to
the file, globs expanded, names bundles, build trees, specs or directories of specs (specs are
compiled into OUT/build first, their diagnostics printed as `arenac check` prints them, exit 1);
a selector that selects no variant is a mistake at its line. Then the campaign runs
(arenac/cli/campaign_run.py, imported only here: the runner's imports are heavy).

Options on the command line override the file's (`--jobs`, `--time-scale`, `-k`). The file's
`backend = "kubernetes"` (with `kubeconfig`, relative to the file, and `context`) runs each trial
on that cluster; its kubeconfig is loaded first, a mistake refused at its key, exit 2.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import click

from arenac.cli.common import build_or_exit, compile_or_exit
from arenac.cli.runner_options import (
    OneLineUsageError,
    RunnerCommand,
    cluster_problem,
    cluster_target,
    isolation,
    isolation_options,
)
from arenac.extras import require_local
from arenac.runner import preflight


@click.command(cls=RunnerCommand)
@click.argument("campaign_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", default=None, help="The campaign directory (default: campaigns/<the file's name>); "
                                          "rerun with the same one to resume.")
@click.option("-k", "repeats", type=click.IntRange(min=1), default=None, help="Trials per agent and variant "
                                                                              "(default: the file's k).")
@click.option("--jobs", type=preflight.Jobs(), default=None, help="Trials side by side (default: the file's jobs).")
@click.option("--time-scale", type=preflight.TimeScale(), default=None,
              help="Compress every duration (default: the file's time_scale).")
@isolation_options
def campaign(campaign_file, out, repeats, jobs, time_scale, sandbox, agent_network, agent_ro):
    """Run every agent of a campaign file on every variant it selects, k times each, and record
    the trials in OUT/results.sqlite. Rerun to resume: finished trials are not run again.

    Exit 0: every trial has a result; 1: stopped with trials left (rerun to resume)."""
    require_local("campaign")
    from arenac.campaign.spec_file import CampaignFileError, load_campaign
    from arenac.runner.launch import check_agent

    path = Path(campaign_file)
    try:
        loaded = load_campaign(path)
    except CampaignFileError as error:
        _refuse_lines([str(problem) for problem in error.problems])
    spec = loaded.spec
    updates = {key: value for key, value in (("k", repeats), ("jobs", jobs), ("time_scale", time_scale))
               if value is not None}
    spec = spec.model_copy(update=updates)
    problems = [str(loaded.problem(("agents", name), problem)) for name, agent in spec.agents.items()
                if (problem := check_agent(agent))]
    jobs_problem = preflight.jobs_problem(spec.jobs) if jobs is None else None
    if jobs_problem:
        problems.append(str(loaded.problem(("jobs",), jobs_problem)))
    out_dir = Path(out) if out else Path("campaigns") / path.stem
    out_problem = preflight.campaign_out_problem(out_dir)
    if out_problem:
        problems.append(out_problem)
    _refuse_lines(problems)
    bundle_dirs = _select(loaded, out_dir)
    agent_dirs = [_relative_to(path.parent, p) for p in spec.agent_ro]
    missing = [p for p in agent_dirs if not p.is_dir()]
    _refuse_lines([str(loaded.problem(("agent_ro",), f"{p.as_posix()}: no such directory")) for p in missing])
    confinement = isolation(sandbox, agent_network, (*agent_ro, *map(str, agent_dirs)))
    kubeconfig = _relative_to(path.parent, spec.kubeconfig) if spec.kubeconfig is not None else None
    cluster_refused = cluster_problem(spec.backend, kubeconfig, spec.context, file_keys=True)
    if cluster_refused:  # said at the key it concerns (a local backend given a kubeconfig: at the backend)
        key = "kubeconfig" if spec.backend == "kubernetes" and kubeconfig is not None else "backend"
        _refuse_lines([str(loaded.problem((key,), cluster_refused))])
    from arenac.cli.campaign_run import campaign_command  # lazily: heavy

    sys.exit(campaign_command(spec, bundle_dirs, out_dir, confinement,
                              cluster_target(spec.backend, kubeconfig, spec.context)))


def _refuse_lines(lines: list[str]) -> None:
    """Every problem on a line of its own (`arenac: ...`), then exit 2; nothing when there is none."""
    if not lines:
        return
    for line in lines[:-1]:
        click.echo(f"arenac: {line}", err=True)
    raise OneLineUsageError(lines[-1])


def _relative_to(base: Path, text: str) -> Path:
    given = Path(text)
    return given if given.is_absolute() else base / given


def _select(loaded, out: Path) -> list[str]:
    """The bundle directories the selectors select, in order, each once; a selector that selects
    none is refused at its line."""
    from arenac.model.plan import Plan

    chosen: dict[Path, None] = {}
    problems = []
    for index, selector in enumerate(loaded.spec.variants):
        pattern = os.path.normpath(_relative_to(loaded.path.parent, selector.path))
        matches = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) else (
            [pattern] if Path(pattern).exists() else [])
        if not matches:
            problems.append(str(loaded.problem(("variants", index, "path"), f"{selector.path!r}: no such file or "
                                               "directory" + (" matches it" if glob.has_magic(pattern) else ""))))
            continue
        found = _bundles_of([Path(m) for m in matches], out)
        kept = []
        for bundle in found:
            plan = Plan.model_validate_json((bundle / "plan.json").read_text(encoding="utf-8"))
            if ((not selector.task or plan.task in selector.task)
                    and (not selector.layer or any(f.layer in selector.layer for f in plan.faults))
                    and (not selector.access or plan.access.name in selector.access)):
                kept.append(bundle)
        if not kept:
            problems.append(str(loaded.problem(("variants", index), f"selects no variant ({len(found)} found under "
                                               f"{selector.path!r}, none passes its filters)")))
        chosen.update(dict.fromkeys(kept))
    _refuse_lines(problems)
    return [bundle.as_posix() for bundle in chosen]


def _bundles_of(paths: list[Path], out: Path) -> list[Path]:
    """Bundles given, bundles under build trees, and the bundles of specs (compiled into OUT/build)."""
    bundles, specs = [], []
    for path in paths:
        if (path / "manifest.json").is_file():
            bundles.append(path)
        elif path.is_dir() and any(path.rglob("manifest.json")):
            bundles += sorted(p.parent for p in path.rglob("manifest.json") if p.is_file())
        else:
            specs.append(path.as_posix())
    if specs:
        compilation = compile_or_exit(specs, "text")
        bundles += [written.path for written in build_or_exit(compilation, out / "build")]
    return bundles
