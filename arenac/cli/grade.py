"""The verifier's command, `arenac grade RUN_DIR [--gates FILE] [--no-write]`: re-grade a saved run
from its evidence alone.

Contract: grades RUN_DIR/evidence against FILE (default RUN_DIR/evidence/gates.json),
prints the verdict summary, and (unless --no-write, for trying other gates on a recorded
run) rewrites RUN_DIR/verdict.json and RUN_DIR/reward.json (atomically). Exit 0 whatever the
reward; exit 1, with a one-line message and no traceback, and nothing written, when it refuses:
RUN_DIR is not a directory, is marked incomplete (its episode never finished: arenac/rundir.py),
or its evidence or the gates cannot be read (evidence/timeline.json missing, for one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(name="grade")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--gates", "gates_file", type=click.Path(path_type=Path), default=None,
              help="Gates to grade against (default: RUN_DIR/evidence/gates.json).")
@click.option("--no-write", is_flag=True, help="Print the verdict only; leave verdict.json and reward.json alone.")
def grade(run_dir: Path, gates_file: Path | None, no_write: bool) -> None:
    """Re-grade a saved run from its evidence alone."""
    # lazily: `arenac --help` imports this module to list the command; the verifier loads only to grade
    from arenac.rundir import incomplete_reason
    from arenac.verify.evidence import EvidenceError
    from arenac.verify.grade import grade as grade_evidence
    from arenac.verify.grade import write_results
    from arenac.verify.verdict import summary

    if not run_dir.is_dir():
        click.echo(f"arenac grade: {run_dir} is not a directory", err=True)
        sys.exit(1)
    unfinished = incomplete_reason(run_dir)
    if unfinished:  # its evidence is partial: a verdict over it would look final and be wrong
        click.echo(f"arenac grade: refusing {run_dir}: {unfinished}", err=True)
        sys.exit(1)
    try:
        verdict = grade_evidence(run_dir / "evidence", gates_file)
    except EvidenceError as error:
        click.echo(f"arenac grade: cannot grade {run_dir}: {error}", err=True)
        sys.exit(1)
    if not no_write:
        write_results(run_dir, verdict)
    click.echo(summary(verdict))
