"""`arenac export harbor`: compiled bundles as Harbor tasks (docs/harbor.md; the work is arenac/export/).

Contract:
- `export harbor BUNDLE|BUILD_DIR... -o DIR [--time-scale S]` writes one Harbor task per variant
  under DIR and DIR/dataset.toml, then prints a line per task with its size in bytes and a total.
- `export harbor --check DIR...` checks exported tasks (or exports holding them) against their
  identity files: `ok: PATH`, or `PATH: FINDING` per added, removed, altered or re-moded file;
  exit 1 if any differs.
- Bad input (not a bundle, a bundle failing its manifest, an output that is not empty and not an
  earlier export, a path that is no export for --check) is one line on stderr with the path, exit 2.
The export package is imported when the command runs, not when the CLI starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arenac.cli.common import EXIT_USAGE

EXIT_CHANGED = 1  # --check: an exported task differs from its identity file


@click.group()
def export() -> None:
    """Export compiled bundles for other harnesses."""


@export.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), help="The directory to write the Harbor tasks into.")
@click.option("--time-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Compress every plan duration by this factor (the harness runs the episode at it).")
@click.option("--check", "check_only", is_flag=True,
              help="Check exported tasks (PATHS) against their identity files instead of exporting.")
def harbor(paths: tuple[Path, ...], out: Path | None, time_scale: float, check_only: bool) -> None:
    """Write one Harbor task per variant of the bundles in PATHS (bundles or build directories).

    With --check, PATHS are exported tasks or exports, checked for edits since the export."""
    from arenac.export.harbor import ExportError, check, export, find_bundles  # lazily: not at CLI start

    try:
        if check_only:
            if out is not None:
                raise ExportError("--check takes the exports to check as PATHS, not -o")
            changed = False
            for result in check(list(paths)):
                if not result.findings:
                    click.echo(f"ok: {result.path.as_posix()}")
                for finding in result.findings:
                    changed = True
                    click.echo(f"{result.path.as_posix()}: {finding}", err=True)
            if changed:
                sys.exit(EXIT_CHANGED)
            return
        if out is None:
            raise ExportError("missing -o DIR: where to write the Harbor tasks")
        bundles = find_bundles(list(paths))
        sizes = export(bundles, out, time_scale)
    except ExportError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        click.echo(f"error: cannot write the export under {out}: {error.strerror or error}{where}", err=True)
        sys.exit(EXIT_USAGE)
    width = max(len(variant) for variant, _ in sizes)
    for variant, size in sizes:
        click.echo(f"  {variant:<{width}}  {size:>9} bytes")
    click.echo(f"{len(sizes)} task(s), {sum(size for _, size in sizes)} bytes -> {out.as_posix()}/")
