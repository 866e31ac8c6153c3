"""`collect`: a run directory or a campaign directory becomes the report's model: every trial, its
checks as the verifier wrote them (in the spec's units), the statistics, the tables, the failure
classes through the taxonomy's adapter; and any other path is refused in one line."""

from __future__ import annotations

import shutil
import sqlite3
import types

import pytest

from arenac.campaign.stats import summarize
from arenac.campaign.store import CampaignStore, as_trial
from arenac.report import classes
from arenac.report.collect import RESAMPLES, ReportInputError, collect
from arenac.rundir import INCOMPLETE
from helpers.report_runs import ACTIONS, graded_run


def test_a_campaign_gives_every_trial_sorted_with_its_checks(campaign):
    directory, rows = campaign
    report = collect(directory)
    assert report.source == "campaign"
    assert [(t.agent, t.task, t.trial) for t in report.trials] == sorted((r.agent, r.task, r.trial) for r in rows)
    for trial in report.trials:
        row = next(r for r in rows if (r.agent, r.variant, r.trial) == (trial.agent, trial.variant, trial.trial))
        assert (trial.status, trial.reward, trial.reason) == (row.status, row.reward, row.reason)
        # the gate's own checks are the row's, in the same words and units
        assert [(c.gate, c.text, c.passed, c.detail) for c in trial.checks if c.depth == 0] == [
            (c.gate, c.text, c.passed, c.detail) for c in row.checks]
        assert all(c.window for c in trial.checks)  # read from verdict.json: with their windows


def test_the_figures_are_the_statistics_of_the_rows(campaign):
    directory, rows = campaign
    report = collect(directory)
    k = max(r.trial for r in rows)
    assert report.ks == (k,)
    assert report.summary == summarize([as_trial(r) for r in rows], ks=(k,), resamples=RESAMPLES)
    assert [row[0].text for row in report.leaderboard.rows] == sorted({r.agent for r in rows})
    assert [table.id for table in report.breakdowns] == ["by-task", "by-layer", "by-access"]
    tasks = next(t for t in report.breakdowns if t.id == "by-task")
    assert [row[0].text for row in tasks.rows] == sorted({r.task for r in rows})


def test_the_failures_are_plotted_first_up_to_the_limit(campaign):
    directory, rows = campaign
    not_passed = [t for t in collect(directory).trials if not (t.status == "scored" and t.reward == 1)]
    report = collect(directory, plot_limit=len(not_passed))
    plotted = [t for t in report.trials if t.timeline is not None]
    assert report.plotted == len(plotted) == len(not_passed)
    assert all(not (t.status == "scored" and t.reward == 1) for t in plotted)
    assert all(t.note and "--plots" in t.note for t in report.trials if t.timeline is None)
    assert collect(directory, plot_limit=0).plotted == 0
    assert collect(directory).plotted == len(rows)


def test_a_run_directory_is_one_trial_from_its_own_files(tmp_path):
    verdict = graded_run(tmp_path / "run", "fail", agent="adversary:declare-now")
    report = collect(tmp_path / "run")
    (trial,) = report.trials
    assert report.source == "run" and trial.run_dir == "."
    assert (trial.agent, trial.task, trial.variant) == ("adversary:declare-now", verdict.task, verdict.variant)
    assert trial.faults == {"strict": "unknown"} and trial.substrate == "spine"
    assert trial.timeline is not None
    assert len([m for m in trial.timeline.markers if m.kind == "action"]) == len(ACTIONS)


def test_a_campaign_trial_whose_run_directory_is_gone_keeps_its_row(campaign, tmp_path):
    directory, rows = campaign
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    gone = next(r for r in rows if r.checks and not r.reward)
    shutil.rmtree(copy / gone.run_dir)
    trial = next(t for t in collect(copy).trials if (t.agent, t.variant, t.trial) == (gone.agent, gone.variant,
                                                                                      gone.trial))
    assert [(c.text, c.detail) for c in trial.checks] == [(c.text, c.detail) for c in gone.checks]
    assert trial.timeline is None and trial.note == "no timeline: its run directory is missing"


def test_failure_classes_come_from_the_taxonomy_for_scored_failures_only(campaign, monkeypatch):
    directory, rows = campaign
    asked = []

    def classify(run_dir):
        asked.append(run_dir)
        return ("outcome-not-restored",) if "noop" in run_dir.parts else ("premature-declaration", "no-change")

    fake = types.SimpleNamespace(CLASSES=("premature-declaration", "outcome-not-restored", "no-change"),
                                 classify=classify, TaxonomyError=ValueError)
    monkeypatch.setattr(classes, "_taxonomy", lambda: fake)
    report = collect(directory)
    failures = [r for r in rows if r.status == "failed" or (r.status == "scored" and r.reward == 0)]
    assert len(asked) == len(failures)
    counts = {(c.failure_class, c.agent): c.count for c in report.class_counts}
    noop_failures = sum(1 for r in failures if r.agent == "noop")
    assert counts[("outcome-not-restored", "noop")] == noop_failures
    assert counts.get(("outcome-not-restored", "oracle"), 0) == 0
    assert [row[0].text for row in report.class_table.rows] == list(fake.CLASSES)
    assert report.classes_known


def test_without_the_taxonomy_there_are_no_classes(campaign, monkeypatch):
    monkeypatch.setattr(classes, "_taxonomy", lambda: None)
    report = collect(campaign[0])
    assert not report.classes_known and report.class_counts == ()
    assert all(t.classes == () for t in report.trials)


def test_evidence_the_taxonomy_cannot_read_is_counted_apart(campaign, monkeypatch):
    def unreadable(run_dir):
        raise ValueError("evidence/timeline.json: missing")

    fake = types.SimpleNamespace(CLASSES=("no-change",), classify=unreadable, TaxonomyError=ValueError)
    monkeypatch.setattr(classes, "_taxonomy", lambda: fake)
    report = collect(campaign[0])
    assert {c.failure_class for c in report.class_counts} == {classes.UNREADABLE}


def _plain(tmp_path):
    (tmp_path / "notes.txt").write_text("not a run\n")
    return tmp_path


def _incomplete(tmp_path):
    graded_run(tmp_path / "run")
    (tmp_path / "run" / INCOMPLETE).write_text("x\n")
    return tmp_path / "run"


def _ungraded(tmp_path):
    graded_run(tmp_path / "run")
    (tmp_path / "run" / "verdict.json").unlink()
    return tmp_path / "run"


def _empty_campaign(tmp_path):
    CampaignStore.open(tmp_path).close()
    return tmp_path


def _other_schema(tmp_path):
    CampaignStore.open(tmp_path).close()
    with sqlite3.connect(tmp_path / "results.sqlite") as db:
        db.execute("UPDATE meta SET value = 'arenac.campaign-results/v0'")
    return tmp_path


@pytest.mark.parametrize("make, says", [
    (lambda tmp: tmp / "absent", "no such directory"),
    (_plain, "is neither a run directory (run.json) nor a campaign directory (results.sqlite)"),
    (_incomplete, "marked incomplete"),
    (_ungraded, "not a graded run: verdict.json: missing"),
    (_empty_campaign, "the campaign has recorded no trial yet"),
    (_other_schema, "is of schema arenac.campaign-results/v0"),
])
def test_a_path_that_cannot_be_reported_on_is_refused_in_one_line(tmp_path, make, says):
    with pytest.raises(ReportInputError) as refused:
        collect(make(tmp_path))
    assert says in str(refused.value) and "\n" not in str(refused.value)
