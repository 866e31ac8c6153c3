"""The report as JUnit XML, so that a CI system shows a campaign's results as its own test results.

Contract:
- One `<testsuite>` per agent (sorted), one `<testcase>` per trial and gate check (the gate's own
  checks; a re-evaluated predicate under a check is part of its parent's message): `classname`
  is `agent.task.variant`, `name` is `trial N: GATE: CHECK TEXT`.
- A failed check is a `<failure>` whose message is the check's detail in the spec's units (as the
  verifier wrote it) and whose text lists the failing sub-checks, one a line.
- A trial without checks is one test case, `trial N: STATUS`: a `failed` trial (a scored failure)
  is a `<failure>` with its reason; a void or infra_error trial, excluded from the figures, is
  `<skipped>` with its reason.
- The counts of each suite and of the whole (`tests`, `failures`, `skipped`) are junitparser's;
  no time, timestamp or host is written: the same report gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from arenac.report.model import Report, ReportCheck, ReportTrial


def _cases(trial: ReportTrial) -> list[TestCase]:
    classname = trial.key
    if not trial.checks:
        case = TestCase(f"trial {trial.trial}: {trial.status}", classname)
        reason = trial.reason or trial.status
        if trial.status == "failed":
            case.result = [Failure(f"failed: {reason}", "failed")]
        elif trial.status in ("void", "infra_error"):
            case.result = [Skipped(f"{trial.status}: {reason} (excluded from the figures)")]
        return [case]
    cases = []
    groups: list[tuple[ReportCheck, list[ReportCheck]]] = []
    for check in trial.checks:
        if check.depth == 0:
            groups.append((check, []))
        elif groups:
            groups[-1][1].append(check)
    for check, under in groups:
        case = TestCase(f"trial {trial.trial}: {check.gate}: {check.text}", classname)
        if not check.passed:
            failure = Failure(f"{check.text}: {check.detail}", check.gate)
            failing = [f"{'  ' * (sub.depth - 1)}FAIL  {sub.text}: {sub.detail}" for sub in under if not sub.passed]
            if failing:
                failure.text = "\n".join(failing)
            case.result = [failure]
        cases.append(case)
    return cases


def junit_xml(report: Report) -> JUnitXml:
    document = JUnitXml(f"arenac {report.source} {report.name}")
    for agent in sorted({trial.agent for trial in report.trials}):
        suite = TestSuite(agent)
        # at once: junitparser recounts the whole suite on every addition (quadratic in its cases)
        suite.add_testcases([case for trial in report.trials if trial.agent == agent for case in _cases(trial)])
        document.add_testsuite(suite)
    document.update_statistics()  # type: ignore[no-untyped-call]
    return document


def write_junit(report: Report, path: Path) -> None:
    junit_xml(report).write(str(path), pretty=True)
