"""`arenac report PATH [-o OUTDIR] [--plots N]`: the report of a run or a campaign (docs/report.md).

Contract: PATH is a run directory or a campaign directory. The report's files (report.html,
junit.xml, results.json, trials.csv) go to OUTDIR (default PATH/report), and a summary is printed:
the leaderboard, the trials by status, those that did not pass with their failing checks. Exit 0
whatever the results; 1 with one line and no traceback when PATH cannot be reported on (neither
a run nor a campaign directory, a run not finished or not graded, a campaign without trials) or
OUTDIR cannot be written. The report's modules (arenac/report/) are imported only when the
command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_REFUSED = 1


@click.command(name="report")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=None,
              help="Where to write the report's files (default: PATH/report).")
@click.option("--plots", "plots", type=click.IntRange(min=0), default=None,
              help="Plot the timelines of at most this many trials, those that did not pass first (default: 50).")
def report(path: Path, out: Path | None, plots: int | None) -> None:
    """Report on a run or a campaign: an HTML page, JUnit XML, results.json and trials.csv."""
    # lazily: `arenac --help` imports this module to list the command
    from arenac.report.collect import DEFAULT_PLOT_LIMIT, ReportInputError, collect
    from arenac.report.terminal import print_summary
    from arenac.report.write import ReportOutputError, write_report

    try:
        collected = collect(path, DEFAULT_PLOT_LIMIT if plots is None else plots)
        files = write_report(collected, out if out is not None else path / "report")
    except (ReportInputError, ReportOutputError) as error:
        click.echo(f"arenac report: {error}", err=True)
        sys.exit(EXIT_REFUSED)
    print_summary(collected, files, sys.stdout)
