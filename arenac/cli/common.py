"""What every command shares: the exit codes, the one-line refusal, diagnostics printed for
humans (or as JSON), and compiling or writing bundles with the user's mistakes turned into exits.

Exit codes (also in docs/diagnostics.md):
  0  success
  1  the input has errors (diagnostics were printed)
  2  usage error (bad flags or arguments)
  3  a bundle does not match its manifest (verify-bundle) or fmt --check found changes
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from arenac.core.diagnostics import Diagnostic, DiagnosticError, render_text, to_json
from arenac.pipeline import Compilation, WrittenBundle, compile_paths, write_bundles

EXIT_DIAGNOSTICS = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3

FORMAT = click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
                      show_default=True, help="How to print diagnostics and results.")


def refuse(problem: str) -> NoReturn:
    """One line, exit 2, before anything was started (docs/runner.md, Refusals)."""
    click.echo(f"arenac: {problem}", err=True)
    sys.exit(EXIT_USAGE)


def report(error: DiagnosticError, output_format: str) -> None:
    """Print the diagnostics (text on stderr with a count, or one JSON object a line on stdout)."""
    for diagnostic in error.diagnostics:
        if output_format == "json":
            click.echo(to_json(diagnostic))
        else:
            click.echo(render_text(diagnostic, error.sources), err=True)
    if output_format == "text":
        count = len(error.diagnostics)
        click.echo(f"{count} error{'s' if count != 1 else ''}", err=True)


def compile_or_exit(paths, output_format: str) -> Compilation:
    """Compile PATHS; on errors, print them and exit 1. Warnings (a spec free of errors whose
    fault the load is not expected to make manifest) go to stderr, text or one JSON object a
    line, and do not change the exit code."""
    try:
        compilation = compile_paths(list(paths))
    except DiagnosticError as error:
        report(error, output_format)
        sys.exit(EXIT_DIAGNOSTICS)
    warnings = sorted((w for task in compilation.tasks for w in task.warnings), key=Diagnostic.sort_key)
    for warning in warnings:
        text = to_json(warning) if output_format == "json" else render_text(warning, compilation.sources)
        click.echo(text, err=True)
    if warnings and output_format == "text":
        click.echo(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}", err=True)
    return compilation


def build_or_exit(compilation: Compilation, out: Path) -> list[WrittenBundle]:
    """Write the bundles; an output that cannot be written is a usage error, not a traceback."""
    try:
        return write_bundles(compilation, out)
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        click.echo(f"error: cannot write bundles under {out.as_posix()}: {error.strerror or error}{where}", err=True)
        sys.exit(EXIT_USAGE)
