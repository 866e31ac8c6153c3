"""The summary `arenac campaign` prints (arenac/cli/campaign_run.py `summary_lines`): the
leaderboard with the full-fix columns, and the per-class counts of the failures, read from rows
(no campaign runs here)."""

from __future__ import annotations

import re

from arenac.cli.campaign_run import summary_lines
from helpers.campaign_rows import trial_row


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())  # a cell holds single spaces at most


def test_the_leaderboard_says_the_full_fixes_and_the_pass_rate_among_them():
    rows = [trial_row("fixer", 1, reward=1, outcome=True, full_fix=True),
            trial_row("fixer", 2, failure_classes=("premature-declaration",), full_fix=True),
            trial_row("fixer", 3, failure_classes=("outcome-not-restored", "no-change"), full_fix=False),
            trial_row("noop", 1, failure_classes=("outcome-not-restored", "no-change"), full_fix=False)]
    lines = summary_lines(rows)
    assert _cells(lines[0])[-2:] == ["full fix", "pass given full fix"]
    assert _cells(lines[1])[-2:] == ["2", "50%"]  # fixer: 1 pass of its 2 full fixes
    assert _cells(lines[2])[-2:] == ["0", "-"]  # noop: never a full fix
    at = lines.index("failure classes (a failure may be in several):")
    assert _cells(lines[at + 1]) == ["agent", "premature-declaration", "outcome-not-restored", "no-change"]
    assert _cells(lines[at + 2]) == ["fixer", "1", "1", "1"]
    assert _cells(lines[at + 3]) == ["noop", "0", "1", "1"]


def test_no_class_table_without_a_classified_failure_and_a_column_for_the_unclassified():
    passes = [trial_row("oracle", 1, reward=1, outcome=True, full_fix=True)]
    assert not any(line.startswith("failure classes") for line in summary_lines(passes))
    unread = passes + [trial_row("noop", 1, taxonomy_problem="verdict.json: missing")]
    lines = summary_lines(unread)
    at = lines.index("failure classes (a failure may be in several):")
    assert _cells(lines[at + 1]) == ["agent", "not classified"]
    assert _cells(lines[at + 2]) == ["noop", "1"]
