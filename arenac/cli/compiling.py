"""The compiler's commands: `arenac check`, `compile`, `variants` and `fmt`.

Contract: each reads specs (files or directories), prints diagnostics through `common.report`
(exit 1) and otherwise its result: a count (`check`), the bundles written and their cells
(`compile`, or JSON), the variant matrix (`variants`, table or JSON), the files reformatted or
that would be (`fmt`; `--check` exits 3 if any would change and writes nothing).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arenac.cli.common import EXIT_DIAGNOSTICS, EXIT_MISMATCH, FORMAT, build_or_exit, compile_or_exit, report
from arenac.core.diagnostics import DiagnosticError
from arenac.core.serialize import dump_json
from arenac.pipeline import read_sources


@click.command()
@click.argument("paths", nargs=-1, required=True)
@FORMAT
def check(paths, output_format):
    """Check specs (files or directories) without writing anything."""
    compilation = compile_or_exit(paths, output_format)
    variants = sum(len(t.variants) for t in compilation.tasks)
    if output_format == "text":
        click.echo(f"ok: {len(compilation.tasks)} task(s), {variants} variant(s)")


@click.command(name="compile")
@click.argument("paths", nargs=-1, required=True)
@click.option("-o", "--out", default="build", show_default=True, help="Output directory.")
@FORMAT
def compile_command(paths, out, output_format):
    """Compile specs into one bundle per variant under OUT/<task>/<variant>/."""
    compilation = compile_or_exit(paths, output_format)
    written = build_or_exit(compilation, Path(out))
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


@click.command()
@click.argument("paths", nargs=-1, required=True)
@FORMAT
def variants(paths, output_format):
    """Print the variant matrix, with pruned cells and their reasons."""
    from arenac.cli.variants_table import matrix_rows, render_matrix  # only this command prints the table

    compilation = compile_or_exit(paths, output_format)
    rows = matrix_rows(compilation)
    if output_format == "json":
        click.echo(dump_json([row.as_dict() for row in rows]), nl=False)
    else:
        click.echo(render_matrix(rows))


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", "check_only", is_flag=True, help="Exit 3 if any file is not formatted; write nothing.")
def fmt(paths, check_only):
    """Format specs canonically, in place."""
    from arenac.syntax.fmt import format_source  # only this command lays specs out

    try:
        sources = read_sources(list(paths))
    except DiagnosticError as error:
        report(error, "text")
        sys.exit(EXIT_DIAGNOSTICS)
    changed, failed = [], None
    for name, source in sorted(sources.items()):
        try:
            formatted = format_source(source.text, name=name)
        except DiagnosticError as error:
            report(DiagnosticError(error.diagnostics, sources={name: source}), "text")
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
