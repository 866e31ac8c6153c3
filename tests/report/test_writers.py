"""The report's files, each read back: the HTML page (self-contained, a pass and a failure shown as
such with the details in the spec's units, their failure classes and full fix), JUnit XML
(well-formed, one case per trial and gate check, its failures and skips counted), results.json and
trials.csv (a row per trial, with its fields, classes and full fix), the terminal summary; and
every file the same bytes when the report is made again."""

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
from helpers.report_runs import FAIL_CLASSES


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
        section = _section(page, trial)
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


def _section(page: str, trial) -> str:
    return page.split(f'id="{trial.anchor}"', 1)[1].split("</section>", 1)[0]


def _facts(section: str) -> dict[str, str]:
    return dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", section))


def test_the_html_shows_each_trials_failure_classes_and_full_fix(written):
    report, _, files = written
    page = files["report.html"].read_text()
    noop_failure = next(t for t in report.trials if t.agent == "noop" and t.status == "scored")
    passed = next(t for t in report.trials if t.reward == 1)
    void = next(t for t in report.trials if t.status == "void")
    facts = _facts(_section(page, noop_failure))
    assert facts["failure classes"] == ", ".join(FAIL_CLASSES)
    assert facts["full fix"].startswith("no: ")
    facts = _facts(_section(page, passed))
    assert "failure classes" not in facts and facts["full fix"].startswith("yes: ")
    assert _facts(_section(page, void))["full fix"] == "not said"
    by_class = page.split('id="by-class"', 1)[1].split("</table>", 1)[0]
    assert "<td class=\"\">no-change</td><td class=\"number fail\">2</td><td class=\"number\">0</td>" in by_class
    assert ("<td class=\"\">outcome-not-restored</td><td class=\"number fail\">2</td>"
            "<td class=\"number fail\">1</td>") in by_class
    assert "<td class=\"\">exhaustion</td><td class=\"number\">0</td><td class=\"number\">0</td>" in by_class
    leaderboard = page.split('id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert "<th>full fix</th><th>pass given full fix</th>" in leaderboard


def test_every_file_is_the_same_bytes_when_made_again(campaign, tmp_path):
    directory, _ = campaign
    first = write_report(collect(directory), tmp_path / "first")
    second = write_report(collect(directory), tmp_path / "second")
    assert [path.name for path in first] == [path.name for path in second] == [
        "report.html", "junit.xml", "results.json", "trials.csv"]
    for one, other in zip(first, second, strict=True):
        assert one.read_bytes() == other.read_bytes(), one.name
        assert str(tmp_path) not in one.read_text() and str(directory) not in one.read_text()


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
        assert (trial.classes, trial.full_fix) == (row.failure_classes, row.full_fix)
    assert document.schema_version == "arenac.report/v2"
    assert {(c.failure_class, c.agent): c.count for c in document.class_counts} == {
        ("outcome-not-restored", "noop"): 2, ("no-change", "noop"): 2, ("outcome-not-restored", "oracle"): 1}
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
        assert line["classes"] == "; ".join(row.failure_classes)
        assert line["full_fix"] == {True: "true", False: "false", None: ""}[row.full_fix]
        assert line["taxonomy_problem"] == ""
    noop_failures = [line for line in table if line["agent"] == "noop" and line["status"] == "scored"]
    assert len(noop_failures) == 2
    assert all(line["classes"] == "outcome-not-restored; no-change" and line["full_fix"] == "false"
               for line in noop_failures)
    passes = [line for line in table if line["reward"] == "1"]
    assert passes and all(line["classes"] == "" and line["full_fix"] == "true" for line in passes)


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
