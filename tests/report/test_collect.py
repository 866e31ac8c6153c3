"""`collect`: a run directory or a campaign directory becomes the report's model: every trial, its
checks as the verifier wrote them (in the spec's units), the statistics, the tables, the failure
classes and full fix (a campaign's from its rows, a run's from the taxonomy, both on real recorded
evidence); and any other path is refused in one line."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from arenac.campaign.stats import summarize
from arenac.campaign.store import CampaignStore, as_trial
from arenac.model.campaign import CLASSES
from arenac.model.run import RunRecord
from arenac.model.verdict import Verdict
from arenac.report.collect import RESAMPLES, ReportInputError, collect
from arenac.report.model import UNCLASSIFIED
from arenac.report.tables import UNCLASSIFIED_TEXT
from arenac.report.terminal import summary_lines
from arenac.rundir import INCOMPLETE
from helpers.report_runs import ACTIONS, FAIL_CLASSES, campaign_row, graded_run


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


def test_a_plot_limit_spreads_over_the_agents(campaign):
    """The noop's four trials that did not pass come first in report order; with room for two plots,
    the oracle's one failure is plotted beside the noop's first rather than crowded out."""
    directory, _ = campaign
    report = collect(directory, plot_limit=2)
    plotted = [(t.agent, t.task, t.trial, t.status, t.reward) for t in report.trials if t.timeline is not None]
    noop_failures = [(t.agent, t.task, t.trial) for t in report.trials
                     if t.agent == "noop" and not (t.status == "scored" and t.reward == 1)]
    assert len(noop_failures) == 4
    assert [p[:3] for p in plotted if p[0] == "noop"] == noop_failures[:1]
    assert [p for p in plotted if p[0] == "oracle"] == [("oracle", "disk", 2, "scored", 0)]
    # the passes come only after every agent's failures: with room for six, the sixth is the oracle's first pass
    six = [(t.agent, t.status, t.reward) for t in collect(directory, plot_limit=6).trials if t.timeline is not None]
    assert sorted(six).count(("oracle", "scored", 1)) == 1 and len(six) == 6


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


def test_a_run_directory_whose_run_json_names_its_variant_is_reported_with_it(tmp_path):
    graded_run(tmp_path / "run", "fail")
    record = RunRecord.model_validate_json((tmp_path / "run" / "run.json").read_bytes())
    (tmp_path / "run" / "run.json").write_text(record.model_copy(update={
        "access": "confined", "faults": {"strict": "runtime"}, "substrate": "spine"}).model_dump_json())
    report = collect(tmp_path / "run")
    (trial,) = report.trials
    assert (trial.access, trial.faults) == ("confined", {"strict": "runtime"})
    first_cells = {table.title: [row[0].text for row in table.rows] for table in report.breakdowns}
    assert ["runtime"] in first_cells.values() and ["confined"] in first_cells.values()


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


def _failures(rows):
    return [r for r in rows if r.status == "failed" or (r.status == "scored" and r.reward == 0)]


def test_a_campaigns_classes_and_full_fix_are_its_rows(campaign):
    directory, rows = campaign
    report = collect(directory)
    for trial in report.trials:
        row = next(r for r in rows if (r.agent, r.variant, r.trial) == (trial.agent, trial.variant, trial.trial))
        assert (trial.classes, trial.full_fix, trial.taxonomy_problem) == (row.failure_classes, row.full_fix, None)
    by_status = {(t.agent, t.status, t.reward): t for t in report.trials}
    # a noop failure changed nothing and did not restore the outcome; an oracle failure made the full fix
    assert by_status[("noop", "scored", 0)].classes == FAIL_CLASSES
    assert by_status[("noop", "scored", 0)].full_fix is False
    assert by_status[("oracle", "scored", 0)].classes == ("outcome-not-restored",)
    assert by_status[("oracle", "scored", 0)].full_fix is True
    # a pass has no class (and made the full fix); a trial not scored has neither
    assert by_status[("oracle", "scored", 1)].classes == () and by_status[("oracle", "scored", 1)].full_fix is True
    assert all(t.classes == () and t.full_fix is None for t in report.trials if t.status in ("void", "infra_error"))


def test_the_per_class_counts_are_the_scored_failures_of_each_class(campaign):
    directory, rows = campaign
    report = collect(directory)
    counts = {(c.failure_class, c.agent): c.count for c in report.class_counts}
    noop_failures = sum(1 for r in _failures(rows) if r.agent == "noop")
    assert noop_failures == 2
    assert counts == {("outcome-not-restored", "noop"): noop_failures, ("no-change", "noop"): noop_failures,
                      ("outcome-not-restored", "oracle"): 1}
    assert [row[0].text for row in report.class_table.rows] == list(CLASSES)  # no unclassified row
    table = {row[0].text: [cell.text for cell in row[1:]] for row in report.class_table.rows}
    assert report.class_table.header == ("failure class", "noop", "oracle")
    assert table["no-change"] == ["2", "0"] and table["outcome-not-restored"] == ["2", "1"]
    assert table["premature-declaration"] == ["0", "0"]


def test_the_classes_are_read_from_the_rows_not_recomputed(campaign, tmp_path):
    directory, rows = campaign
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    failure = next(r for r in rows if r.agent == "noop" and r.status == "scored")
    shutil.rmtree(copy / failure.run_dir)  # nothing left to recompute them from
    store = CampaignStore.open(copy)
    store.record(failure.model_copy(update={"failure_classes": ("exhaustion",), "full_fix": True}))
    store.close()
    trial = next(t for t in collect(copy).trials if (t.agent, t.variant, t.trial) == (failure.agent, failure.variant,
                                                                                      failure.trial))
    assert (trial.classes, trial.full_fix) == (("exhaustion",), True)


def test_the_leaderboard_gives_the_pass_rate_given_a_full_fix(campaign):
    report = collect(campaign[0])
    assert report.leaderboard.header[-2:] == ("full fix", "pass given full fix")
    cells = {row[0].text: (row[-2].text, row[-1].text) for row in report.leaderboard.rows}
    # the oracle made the full fix in its 3 passes and its failure; the noop never made it
    assert cells["oracle"][0] == "4" and cells["oracle"][1].startswith("75% [")
    assert cells["noop"] == ("0", "-")
    fixed = {g.key: (g.scored, g.passes) for g in report.summary.given_full_fix.groups}
    assert fixed == {"oracle": (4, 3), "noop": (0, 0)}


def _unreadable_failure(directory: Path, row) -> None:
    """Break a recorded failure's evidence and record its row again, as `arenac campaign` would."""
    (directory / row.run_dir / "evidence" / "snapshots" / "soak_end.json").write_text("{not json")
    verdict = Verdict.model_validate_json((directory / row.run_dir / "verdict.json").read_text())
    store = CampaignStore.open(directory)
    store.record(campaign_row(directory, Path(row.run_dir), verdict, agent=row.agent, task=row.task,
                              trial=row.trial))
    store.close()


def test_a_failure_whose_evidence_the_taxonomy_cannot_read_is_counted_apart(campaign, tmp_path):
    directory, rows = campaign
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    broken = next(r for r in rows if r.agent == "noop" and r.status == "scored")
    _unreadable_failure(copy, broken)
    report = collect(copy)
    trial = next(t for t in report.trials if (t.agent, t.variant, t.trial) == (broken.agent, broken.variant,
                                                                                broken.trial))
    assert trial.unclassified and trial.classes == () and "soak_end.json" in trial.taxonomy_problem
    counts = {(c.failure_class, c.agent): c.count for c in report.class_counts}
    assert counts[(UNCLASSIFIED, "noop")] == 1
    assert counts[("no-change", "noop")] == 1  # the other noop failure is still classified
    assert report.class_table.rows[-1][0].text == UNCLASSIFIED_TEXT
    assert [cell.text for cell in report.class_table.rows[-1][1:]] == ["1", "0"]
    said = [line for line in summary_lines(report) if line.startswith(f"noop on {broken.variant} #{broken.trial}:")]
    assert said == [f"noop on {broken.variant} #{broken.trial}: fail [{UNCLASSIFIED_TEXT}]"]


def test_a_run_directorys_classes_and_full_fix_come_from_the_taxonomy(tmp_path):
    graded_run(tmp_path / "fail", "fail")
    (failure,) = collect(tmp_path / "fail").trials
    assert (failure.classes, failure.full_fix, failure.taxonomy_problem) == (FAIL_CLASSES, False, None)
    graded_run(tmp_path / "pass", "pass")
    report = collect(tmp_path / "pass")
    (passed,) = report.trials
    assert (passed.classes, passed.full_fix) == ((), True)
    assert report.class_counts == ()
    (tmp_path / "fail" / "evidence" / "snapshots" / "soak_end.json").write_text("{not json")
    report = collect(tmp_path / "fail")
    assert report.trials[0].unclassified and report.trials[0].full_fix is None
    assert [(c.failure_class, c.count) for c in report.class_counts] == [(UNCLASSIFIED, 1)]


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
