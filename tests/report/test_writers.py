"""The report's files, each read back: the HTML page (self-contained, deterministic, a pass and a
failure shown as such with the details in the spec's units), JUnit XML (well-formed, one case per
trial and gate check, its failures and skips counted), results.json and trials.csv (a row per
trial, with its fields), and the terminal summary."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import xml.etree.ElementTree as ElementTree

import pytest
from junitparser import Failure, JUnitXml, Skipped

from arenac.report.collect import collect
from arenac.report.html import TEMPLATE, render_html
from arenac.report.results import CSV_COLUMNS, ResultsDocument
from arenac.report.terminal import print_summary
from arenac.report.write import ReportOutputError, write_report
from helpers import ROOT


@pytest.fixture(scope="module")
def written(campaign, tmp_path_factory):
    directory, rows = campaign
    out = tmp_path_factory.mktemp("written")
    report = collect(directory)
    files = write_report(report, out)
    return report, rows, {path.name: path for path in files}


def _failing(rows):
    return [(r, c) for r in rows for c in r.checks if not c.passed]


def test_the_html_shows_passes_and_failures_with_details_in_the_specs_units(written):
    report, rows, files = written
    page = files["report.html"].read_text()
    for trial in report.trials:
        section = page.split(f'id="{trial.anchor}"', 1)[1].split("</section>", 1)[0]
        expected = "pass" if trial.reward == 1 else ("fail" if trial.status == "scored" else trial.status)
        assert f'<span class="status {"pass" if trial.reward else ("fail" if trial.scored else "excluded")}">' \
               f"{expected}</span>" in section
        for check in trial.checks:
            mark = "PASS" if check.passed else "FAIL"
            assert f">{mark}</td><td>{_escaped(check.detail)}</td>" in section
        assert section.count("<svg") == 1 and section.count('class="marker onset"') == 1
    for _, check in _failing(rows):
        assert re.search(r"\d+(\.\d+)?(%| ms) <= \d+(\.\d+)?(%| ms) does not hold", check.detail)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")


def test_the_html_stands_alone_and_its_template_holds_no_logic(written):
    page = written[2]["report.html"].read_text()
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r'(src|href)="(?!#)', page)  # nothing fetched: every link is to the page itself
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    template = (ROOT / "arenac" / "report" / "templates" / TEMPLATE).read_text()
    statements = re.findall(r"{%-?\s*(\w+)", template)
    assert set(statements) <= {"for", "endfor"}, statements


def test_the_html_is_the_same_bytes_wherever_the_campaign_lies(campaign, tmp_path):
    directory, _ = campaign
    shutil.copytree(directory, tmp_path / "elsewhere" / directory.name)
    first = render_html(collect(directory))
    assert render_html(collect(tmp_path / "elsewhere" / directory.name)) == first
    assert str(tmp_path) not in first and str(directory.parent) not in first


def test_junit_is_well_formed_and_counts_every_check(written):
    _, rows, files = written
    root = ElementTree.parse(files["junit.xml"]).getroot()
    assert root.tag == "testsuites"
    document = JUnitXml.fromfile(str(files["junit.xml"]))
    cases = [case for suite in document for case in suite]
    unchecked = [r for r in rows if not r.checks]
    assert len(cases) == sum(len(r.checks) for r in rows) + len(unchecked)
    failures = [case for case in cases if any(isinstance(result, Failure) for result in case.result)]
    skipped = [case for case in cases if any(isinstance(result, Skipped) for result in case.result)]
    assert len(failures) == len(_failing(rows)) + sum(1 for r in unchecked if r.status == "failed")
    assert len(skipped) == sum(1 for r in rows if r.status in ("void", "infra_error"))
    assert int(root.get("failures")) == len(failures) and int(root.get("tests")) == len(cases)
    assert {case.classname for case in cases} == {f"{r.agent}.{r.task}.{r.variant}" for r in rows}
    messages = {result.message for case in failures for result in case.result}
    assert messages == {f"{check.text}: {check.detail}" for _, check in _failing(rows)}


def test_results_json_holds_every_trial_and_the_figures(written):
    report, rows, files = written
    document = ResultsDocument.model_validate(json.loads(files["results.json"].read_text()))
    assert len(document.trials) == len(rows)
    assert document.summary == report.summary
    for trial in document.trials:
        row = next(r for r in rows if (r.agent, r.variant, r.trial) == (trial.agent, trial.variant, trial.trial))
        assert (trial.status, trial.reward, trial.faults, trial.run_dir) == (row.status, row.reward, row.faults,
                                                                             row.run_dir)
    assert "timeline" not in files["results.json"].read_text()


def test_trials_csv_has_a_row_per_trial(written):
    _, rows, files = written
    table = list(csv.DictReader(io.StringIO(files["trials.csv"].read_text())))
    assert len(table) == len(rows) and tuple(table[0]) == CSV_COLUMNS
    for line in table:
        row = next(r for r in rows if (r.agent, r.variant, str(r.trial)) == (line["agent"], line["variant"],
                                                                              line["trial"]))
        failing = [c for c in row.checks if not c.passed]
        assert (line["status"], line["reward"], line["checks_failed"]) == (row.status, str(row.reward),
                                                                           str(len(failing)))
        assert line["failing_checks"] == "; ".join(f"{c.text}: {c.detail}" for c in failing)
        assert line["outcome"] == ("true" if row.outcome else "false")


def test_the_terminal_summary_shows_the_leaderboard_and_what_failed(written):
    report, rows, files = written
    stream = io.StringIO()
    print_summary(report, list(files.values()), stream)
    text = stream.getvalue()
    for agent in {r.agent for r in rows}:
        assert re.search(rf"^{agent}\s", text, re.MULTILINE)
    for _, check in _failing(rows):
        assert f"  FAIL  {check.text}: {check.detail}" in text
    assert all(f"wrote {path.as_posix()}" in text for path in files.values())


def test_an_out_directory_that_cannot_be_written_is_one_line(written, tmp_path):
    (tmp_path / "file").write_text("in the way\n")
    with pytest.raises(ReportOutputError, match="cannot write the report under"):
        write_report(written[0], tmp_path / "file" / "out")
