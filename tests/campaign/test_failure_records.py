"""The failure taxonomy in the campaign's records: a trial row's failure classes, full fix and
taxonomy problem round-trip through the results database and are queryable as columns; a database
of the schema before them is refused; the statistics' pass rate given a full fix counts only the
scored trials that made one."""

from __future__ import annotations

import sqlite3

import pytest

from arenac.campaign.stats import given_full_fix, summarize
from arenac.campaign.store import DATABASE, SCHEMA_VERSION, CampaignStore, StoreError, as_trial
from arenac.campaign.trials import Trial
from helpers.campaign_rows import trial_row

ROWS = [
    trial_row("fixer", 1, reward=1, outcome=True, full_fix=True),
    trial_row("fixer", 2, failure_classes=("premature-declaration", "outcome-not-restored"), full_fix=True),
    trial_row("fixer", 3, failure_classes=("outcome-not-restored", "no-change"), full_fix=False),
    trial_row("fixer", 4, taxonomy_problem="evidence/snapshots/soak_end.json: missing"),
]


def test_the_taxonomy_fields_round_trip_and_are_columns(tmp_path):
    store = CampaignStore.open(tmp_path)
    for row in ROWS:
        store.record(row)
    store.close()
    again = CampaignStore.open(tmp_path)
    assert again.rows() == ROWS
    assert [t.full_fix for t in again.trials()] == [True, True, False, None]
    again.close()
    with sqlite3.connect(tmp_path / DATABASE) as db:
        found = db.execute("SELECT trial, failure_classes, full_fix, taxonomy_problem FROM trials ORDER BY trial")
        assert found.fetchall() == [
            (1, "", 1, None), (2, "premature-declaration,outcome-not-restored", 1, None),
            (3, "outcome-not-restored,no-change", 0, None), (4, "", None, "evidence/snapshots/soak_end.json: missing")]


def test_a_database_of_the_schema_before_the_taxonomy_is_refused(tmp_path):
    with sqlite3.connect(tmp_path / DATABASE) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema_version', 'arenac.campaign-results/v1')")
    assert SCHEMA_VERSION != "arenac.campaign-results/v1"
    with pytest.raises(StoreError, match=r"is of schema arenac\.campaign-results/v1"):
        CampaignStore.open(tmp_path)


def test_a_row_refuses_a_class_the_taxonomy_does_not_know():
    with pytest.raises(ValueError, match="failure_classes"):
        trial_row("fixer", 1, failure_classes=("bad-luck",))


def test_pass_rate_given_a_full_fix_counts_only_the_scored_trials_that_made_one():
    trials = [as_trial(row) for row in ROWS] + [
        Trial(agent="fixer", task="pool-budget", variant="v", faults={"pool": "runtime"}, access="confined",
              substrate="spine", status="void", reward=0, full_fix=None),
        Trial(agent="noop", task="pool-budget", variant="v", faults={"pool": "runtime"}, access="confined",
              substrate="spine", status="scored", reward=0, full_fix=False)]
    figures = {group.key: group for group in given_full_fix(trials).groups}
    assert (figures["fixer"].scored, figures["fixer"].passes, figures["fixer"].pass_rate) == (2, 1, 0.5)
    assert (figures["noop"].scored, figures["noop"].pass_rate, figures["noop"].wilson) == (0, None, None)
    assert summarize(trials, resamples=10).given_full_fix == given_full_fix(trials)
