"""Command-line entry point.

The CLI is the only place that formats errors for humans: every phase raises
data-carrying errors, and the commands here turn them into diagnostics and exit codes.
The compiler is imported up front (every compiling command needs it; its renderer only
when rendering); the runner, the verifier and the substrate, whose imports are heavy,
only inside the commands that use them, so that `arenac check` never loads them.

Exit codes (also in docs/diagnostics.md):
  0  success
  1  the input has errors (diagnostics were printed)
  2  usage error (bad flags or arguments)
  3  a bundle does not match its manifest (verify-bundle) or fmt --check found changes
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import ClassVar, NoReturn

import click

from arenac.bundle import MANIFEST, verify_bundle
from arenac.core.diagnostics import DiagnosticError, render_text, to_json
from arenac.core.serialize import dump_json
from arenac.extras import missing_local, require_local, unavailable_command
from arenac.fmt import format_source
from arenac.lower.library import load_library
from arenac.pipeline import Compilation, WrittenBundle, compile_paths, read_sources, write_bundles
from arenac.runner import preflight  # light (no runner machinery): option types and refusals
from arenac.runner.adversaries import STRATEGIES  # light: the suite's names and descriptions
from arenac.variants_table import matrix_rows, render_matrix

EXIT_DIAGNOSTICS = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3


class _OneLineUsageError(click.UsageError):
    """A usage error as one line on stderr (`arenac: ...`), exit 2: what the runner's commands
    print for every input they refuse before starting anything (docs/runner.md)."""

    def show(self, file=None) -> None:
        click.echo(f"arenac: {self.format_message()}", err=True, file=file)


class _RunnerCommand(click.Command):
    """`arenac run` and `arenac qualify`: click's own refusals (a bad option value, a missing
    argument, a bundle path that does not exist) as one line instead of usage + hint + error."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            raise _OneLineUsageError(error.format_message(), ctx) from None


def _refuse(problem: str) -> NoReturn:
    """One line, exit 2, before anything was started (docs/runner.md, Refusals)."""
    click.echo(f"arenac: {problem}", err=True)
    sys.exit(EXIT_USAGE)


_FORMAT = click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
                       show_default=True, help="How to print diagnostics and results.")


class LazyGroup(click.Group):
    """Commands that live in their own packages are imported only when invoked (or listed in
    --help), so that `arenac check` never pays for the verifier's or the substrate's imports."""

    lazy: ClassVar[dict[str, str]] = {
        "substrate": "arenac.substrate.cli:substrate",
        "grade": "arenac.verify.cli:grade",
    }
    # the lazy commands whose modules import the `local` extra's packages (arenac/extras.py)
    needs_local: ClassVar[frozenset[str]] = frozenset({"substrate", "grade"})

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.lazy:
            missing = missing_local() if name in self.needs_local else []
            if missing:
                return unavailable_command(name, missing)
            module, _, attribute = self.lazy[name].partition(":")
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arenac")
def main() -> None:
    """arenac: compile and run live-incident benchmark tasks."""


def _report(error: DiagnosticError, output_format: str) -> None:
    for diagnostic in error.diagnostics:
        if output_format == "json":
            click.echo(to_json(diagnostic))
        else:
            click.echo(render_text(diagnostic, error.sources), err=True)
    if output_format == "text":
        count = len(error.diagnostics)
        click.echo(f"{count} error{'s' if count != 1 else ''}", err=True)


def _compile(paths, output_format: str) -> Compilation:
    try:
        return compile_paths(list(paths))
    except DiagnosticError as error:
        _report(error, output_format)
        sys.exit(EXIT_DIAGNOSTICS)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@_FORMAT
def check(paths, output_format):
    """Check specs (files or directories) without writing anything."""
    compilation = _compile(paths, output_format)
    variants = sum(len(t.variants) for t in compilation.tasks)
    if output_format == "text":
        click.echo(f"ok: {len(compilation.tasks)} task(s), {variants} variant(s)")


@main.command(name="compile")
@click.argument("paths", nargs=-1, required=True)
@click.option("-o", "--out", default="build", show_default=True, help="Output directory.")
@_FORMAT
def compile_command(paths, out, output_format):
    """Compile specs into one bundle per variant under OUT/<task>/<variant>/."""
    compilation = _compile(paths, output_format)
    written = _build(compilation, Path(out))
    if output_format == "json":
        click.echo(dump_json([{"task": w.task, "variant": w.variant, "path": w.path.as_posix(), "files": w.files}
                              for w in written]), nl=False)
        return
    for task in compilation.tasks:
        spec = task.lowered.spec
        variants, pruned = task.variants, task.pruned
        click.echo(f"{spec.name}: {len(variants)} variant(s), {len(pruned)} pruned -> "
                   f"{Path(out, spec.name).as_posix()}/")
        for variant in variants:
            cell = ", ".join(f"{k}={v}" for k, v in variant.coordinates.items())
            click.echo(f"  {variant.id}  {cell}")


@main.command()
@click.argument("paths", nargs=-1, required=True)
@_FORMAT
def variants(paths, output_format):
    """Print the variant matrix, with pruned cells and their reasons."""
    compilation = _compile(paths, output_format)
    rows = matrix_rows(compilation)
    if output_format == "json":
        click.echo(dump_json([row.as_dict() for row in rows]), nl=False)
    else:
        click.echo(render_matrix(rows))


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", "check_only", is_flag=True, help="Exit 3 if any file is not formatted; write nothing.")
def fmt(paths, check_only):
    """Format specs canonically, in place."""
    try:
        sources = read_sources(list(paths))
    except DiagnosticError as error:
        _report(error, "text")
        sys.exit(EXIT_DIAGNOSTICS)
    changed, failed = [], None
    for name, source in sorted(sources.items()):
        try:
            formatted = format_source(source.text, name=name)
        except DiagnosticError as error:
            _report(DiagnosticError(error.diagnostics, sources={name: source}), "text")
            failed = True
            continue
        if formatted != source.text:
            changed.append(name)
            if not check_only:
                Path(name).write_text(formatted, encoding="utf-8")
    for name in changed:
        click.echo(f"{'would reformat' if check_only else 'reformatted'} {name}")
    if failed:
        sys.exit(EXIT_DIAGNOSTICS)
    if check_only and changed:
        sys.exit(EXIT_MISMATCH)


@main.command()
def schema():
    """Print the JSON Schema of plan.json."""
    from arenac.render.plan import plan_json_schema  # lazily: the renderer stays out of `arenac check`

    click.echo(dump_json(plan_json_schema()), nl=False)


@main.command(name="verify-bundle")
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
def verify_bundle_command(directories):
    """Check bundles against their manifests; name every altered, missing or extra file.

    Each DIRECTORY is a bundle, or a tree of them (such as a build directory)."""
    bundles: list[Path] = []
    for directory in map(Path, directories):
        found = [directory] if (directory / MANIFEST).is_file() else sorted(
            p.parent for p in directory.rglob(MANIFEST) if p.is_file())
        if not found:
            click.echo(f"error: {directory.as_posix()} is not a bundle and holds none (no {MANIFEST})", err=True)
            sys.exit(EXIT_USAGE)
        bundles += found
    bad = False
    for bundle in bundles:
        name = bundle.as_posix()
        result = verify_bundle(bundle)
        if result.ok:
            click.echo(f"ok: {name}")
            continue
        bad = True
        if result.problem:
            click.echo(f"{name}: {result.problem}", err=True)
        for kind, paths in (("altered", result.altered), ("mode changed", result.mode_changed),
                            ("missing", result.missing), ("not in manifest", result.unexpected)):
            for path in paths:
                click.echo(f"{name}: {kind}: {path}", err=True)
    if bad:
        sys.exit(EXIT_MISMATCH)


def _isolation_options(command):
    """--sandbox, --agent-network, --agent-ro: how the agent is confined (docs/security.md)."""
    command = click.option("--agent-ro", "agent_ro", multiple=True, type=click.Path(file_okay=False, exists=True),
                           help="A directory the agent's own program needs, bound read-only into its sandbox "
                                "(repeatable).")(command)
    command = click.option("--agent-network", type=click.Choice(["private", "host"]), default="private",
                           show_default=True, help="private: the agent reaches only its tools; host: this "
                                                   "machine's network too (e.g. a model API).")(command)
    return click.option("--sandbox", type=click.Choice(["auto", "bwrap", "none"]), default="auto",
                        show_default=True, help="The agent's sandbox (auto: bubblewrap where it works, "
                                                "else none, with a warning).")(command)


def _isolation(sandbox, agent_network, agent_ro):
    from arenac.runner.episode import Isolation  # lazily: the episode machinery is heavy (`run`, `qualify` only)

    return Isolation(sandbox=sandbox, agent_network=agent_network,
                     agent_ro=tuple(Path(p).resolve() for p in agent_ro))


@main.command(cls=_RunnerCommand)
@click.argument("bundle", type=click.Path(file_okay=False, exists=True))
@click.option("--agent", default="oracle", show_default=True,
              help='oracle, noop, adversary:NAME (the built-in suite: see `arenac adversaries`), or cmd:"PROGRAM ARGS"')
@click.option("--time-scale", type=preflight.TimeScale(), default=1.0, show_default=True,
              help="Compress every duration (a finite number above 0).")
@click.option("--out", default=None, help="Run directory (default: runs/<variant>); an earlier run there is replaced.")
@click.option("--healthy", is_flag=True, help="Run without injecting the faults (the healthy control).")
@_isolation_options
def run(bundle, agent, time_scale, out, healthy, sandbox, agent_network, agent_ro):
    """Run one episode of a compiled bundle on the local backend, and grade it."""
    require_local("run")
    from arenac.runner.cli import run_command  # lazily: the runner's imports are heavy (`run` only)

    run_dir = Path(out) if out else preflight.default_run_dir(bundle)
    problem = preflight.run_out_problem(run_dir) if run_dir is not None else None
    if problem:
        _refuse(problem)
    sys.exit(run_command(bundle, agent, time_scale, out, healthy, _isolation(sandbox, agent_network, agent_ro)))


@main.command(cls=_RunnerCommand)
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
@_isolation_options
def qualify(paths, repeats, time_scale, out, jobs, adversarial, strategies, adversary_k, sandbox, agent_network,
            agent_ro):
    """Qualify variants: healthy control passes, no-op fails, oracle passes (each k times).

    With --adversarial, every strategy of the built-in suite must fail on every variant and the
    fix-now control must pass; a variant with a passing adversary does not qualify.

    PATHS are specs (compiled first, into OUT/build) or compiled bundle directories."""
    require_local("qualify")
    from arenac.runner.cli import check_strategies, qualify_command  # lazily: heavy (`qualify` only)

    adversarial = adversarial or bool(strategies)
    problem = check_strategies(list(strategies)) or preflight.qualification_out_problem(Path(out))
    if problem:  # before the specs are compiled into OUT/build
        _refuse(problem)
    bundles = _bundles_for(paths, out)
    sys.exit(qualify_command(bundles, repeats, time_scale, out, jobs, _isolation(sandbox, agent_network, agent_ro),
                             adversarial, adversary_k, strategies))


@main.command()
def adversaries():
    """List the built-in adversarial strategies (`--agent adversary:NAME`, `qualify --adversarial`)."""

    width = max(len(s.name) for s in STRATEGIES)
    for strategy in STRATEGIES:
        key = "answer key" if strategy.answer_key else ""
        click.echo(f"{strategy.name:<{width}}  must {strategy.expected}  {key:<10}  {strategy.description}")


@main.command()
@click.option("--runs", default=3, show_default=True, help="independent runs, each on a fresh stack")
@click.option("--time-scale", default=1.0, show_default=True, help="multiplies every duration of the profile")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="default: the committed library/substrates/spine/baseline.json")
def calibrate(runs: int, time_scale: float, out: Path | None) -> None:
    """Drive the standard load against healthy spine stacks and write the baseline."""
    require_local("calibrate")
    from arenac.substrate.cli import write_calibration  # lazily: the substrate's runtime is heavy

    try:
        profile = load_library().substrates["spine"].loads["standard"]
    except DiagnosticError as error:
        _report(error, "text")
        sys.exit(EXIT_DIAGNOSTICS)
    write_calibration(profile, runs, time_scale, out)


def _bundles_for(paths, out) -> list[str]:
    """Bundle directories: given directly, or compiled from the specs given."""
    bundles = [p for p in paths if (Path(p) / "manifest.json").is_file()]
    specs = [p for p in paths if p not in bundles]
    if specs:
        compilation = _compile(specs, "text")
        bundles += [w.path.as_posix() for w in _build(compilation, Path(out) / "build")]
    return bundles


def _build(compilation: Compilation, out: Path) -> list[WrittenBundle]:
    """Write the bundles; an output that cannot be written is a usage error, not a traceback."""
    try:
        return write_bundles(compilation, out)
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        click.echo(f"error: cannot write bundles under {out.as_posix()}: {error.strerror or error}{where}", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":  # `python -m arenac.cli`
    main()
