"""Fixtures of the report's tests: a small campaign directory (results.sqlite and its run
directories, built from recorded evidence by helpers.report_runs) made once, and a graded run."""

from __future__ import annotations

import pytest

from helpers.report_runs import fake_campaign, graded_run

# (agent, task, trial, kind): every kind of trial, and each agent with two tasks and k = 2; the
# oracle's failure made the full fix (helpers.report_runs), the noop's did not
TRIALS = (("oracle", "pool", 1, "pass"), ("oracle", "pool", 2, "pass"), ("oracle", "disk", 1, "pass"),
          ("oracle", "disk", 2, "fail_fixed"), ("noop", "pool", 1, "fail"), ("noop", "pool", 2, "void"),
          ("noop", "disk", 1, "fail"), ("noop", "disk", 2, "infra_error"))


@pytest.fixture(scope="session")
def campaign(tmp_path_factory):
    """(the campaign directory, its rows); tests write their reports elsewhere (-o)."""
    directory = tmp_path_factory.mktemp("report") / "campaign"
    return directory, fake_campaign(directory, TRIALS)


@pytest.fixture(scope="session")
def failing_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("report") / "run"
    graded_run(directory, "fail", agent="noop")
    return directory
