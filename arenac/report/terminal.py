"""The report's summary on a terminal: the leaderboard (report/tables.py), the trials by status,
the trials that did not pass with their failure classes (or that the taxonomy could not read
their evidence) and their failing checks in the spec's units (at most `MAX_FAILURES`, then how
many more), and the files written.

Contract: `print_summary(report, files, stream)` writes to `stream` with rich's tables (colour
and box lines only on a terminal; plain text in a pipe or a CI log). It reads nothing but the
report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from arenac.report.html import status_text
from arenac.report.model import Report, Table
from arenac.report.tables import UNCLASSIFIED_TEXT

MAX_FAILURES = 10
WIDE = 200
STYLES = {"pass": "green", "fail": "red", "excluded": "yellow", "none": "dim"}


def _rich(table: Table) -> RichTable:
    shown = RichTable(title=table.title, title_justify="left", show_edge=False, pad_edge=False)
    for index, name in enumerate(table.header):
        numeric = bool(table.rows) and "number" in table.rows[0][index].css
        shown.add_column(name, justify="right" if numeric else "left")
    for row in table.rows:
        shown.add_row(*(Text(cell.text, style=_style(cell.css)) for cell in row))
    return shown


def _style(css: str) -> str:
    return next((STYLES[word] for word in css.split() if word in STYLES), "")


def summary_lines(report: Report) -> list[str]:
    """The trials by status and those that did not pass, as plain lines."""
    statuses: dict[str, int] = {}
    for trial in report.trials:
        statuses[status_text(trial)] = statuses.get(status_text(trial), 0) + 1
    lines = [f"{len(report.trials)} trial(s): " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))]
    failing = [t for t in report.trials if not (t.status == "scored" and t.reward == 1)]
    for trial in failing[:MAX_FAILURES]:
        lines.append(f"{trial.agent} on {trial.variant} #{trial.trial}: {status_text(trial)}"
                     + (f" ({trial.reason})" if trial.reason else "")
                     + (f" [{', '.join(trial.classes)}]" if trial.classes else "")
                     + (f" [{UNCLASSIFIED_TEXT}]" if trial.unclassified else ""))
        lines += [f"  FAIL  {c.text}: {c.detail}" for c in trial.checks if not c.passed and c.depth == 0]
    if len(failing) > MAX_FAILURES:
        lines.append(f"... and {len(failing) - MAX_FAILURES} more trial(s) that did not pass (see the HTML report)")
    return lines


def print_summary(report: Report, files: Sequence[Path], stream: TextIO) -> None:
    # in a pipe rich assumes 80 columns and would cut the table's columns short: a log is not a screen
    console = Console(file=stream, highlight=False, soft_wrap=True, width=None if stream.isatty() else WIDE)
    console.print(_rich(report.leaderboard))
    for line in summary_lines(report):
        console.print(line, markup=False)
    for path in files:
        console.print(f"wrote {path.as_posix()}", markup=False)
