"""Every file of a report, written into one directory.

Contract: `write_report(report, out)` creates OUT (and its parents) and writes `report.html`,
`junit.xml`, `results.json` and `trials.csv` there, replacing earlier ones and leaving anything
else in OUT alone; it returns their paths in that order. `ReportOutputError` (one line) when OUT
cannot be made or written.
"""

from __future__ import annotations

from pathlib import Path

from arenac.report.html import write_html
from arenac.report.junit import write_junit
from arenac.report.model import Report
from arenac.report.results import write_results_json, write_trials_csv

FILES = (("report.html", write_html), ("junit.xml", write_junit), ("results.json", write_results_json),
         ("trials.csv", write_trials_csv))


class ReportOutputError(Exception):
    """The report's directory cannot be written; the message is one line."""


def write_report(report: Report, out: Path) -> list[Path]:
    written = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, writer in FILES:
            writer(report, out / name)
            written.append(out / name)
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        raise ReportOutputError(f"cannot write the report under {out.as_posix()}: {error.strerror or error}{where}") \
            from None
    return written
