"""The campaign's results database (arenac/campaign/store.py): real SQLite, rows round-trip, a trial
recorded again replaces its row and its checks, several threads write safely, and a database of
another schema is refused rather than mixed with."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from arenac.campaign.store import DATABASE, CampaignStore, StoreError
from arenac.model.campaign import CheckResult, SetAsideAttempt, TrialRow


def _row(agent="oracle", variant="revoked-grant-b040b8df", trial=1, **changes) -> TrialRow:
    fields = dict(agent=agent, agent_spec=agent, task="revoked-grant", variant=variant, trial=trial,
                  faults={"grant": "runtime"}, access="confined", substrate="spine", status="scored", reward=1,
                  outcome=True, safe_repair=True, wall_s=41.5,
                  run_dir=f"runs/{agent}/revoked-grant/{variant}/trial-{trial}",
                  checks=(CheckResult(gate="outcome", text="error_rate(send) <= 1%", passed=True, detail="0.2% <= 1%"),
                          CheckResult(gate="safety", text="survives restart", passed=True, detail="held")))
    fields.update(changes)
    return TrialRow(**fields)


def test_rows_round_trip_and_are_queryable_as_columns(tmp_path):
    store = CampaignStore.open(tmp_path)
    rows = [_row(), _row(agent="noop", status="scored", reward=0, outcome=False, safe_repair=False,
                         reason=None, set_aside=(SetAsideAttempt(run_dir="x.infra-error-1", reason="boom"),))]
    for row in rows:
        store.record(row)
    store.close()
    again = CampaignStore.open(tmp_path)
    assert again.rows() == sorted(rows, key=lambda r: (r.agent, r.task, r.variant, r.trial))
    assert [t.passed for t in again.trials()] == [False, True]  # noop, oracle
    again.close()
    with sqlite3.connect(tmp_path / DATABASE) as db:
        assert db.execute("SELECT agent, attempts, reward, layers FROM trials ORDER BY agent").fetchall() == [
            ("noop", 2, 0, "runtime"), ("oracle", 1, 1, "runtime")]
        assert db.execute("SELECT COUNT(*) FROM checks WHERE agent = 'oracle'").fetchone() == (2,)


def test_a_trial_recorded_again_replaces_its_row_and_its_checks(tmp_path):
    store = CampaignStore.open(tmp_path)
    store.record(_row())
    store.record(_row(status="void", reward=0, outcome=False, safe_repair=False, reason="no fault showed", checks=()))
    (row,) = store.rows()
    assert row.status == "void" and row.reason == "no fault showed"
    store.close()
    with sqlite3.connect(tmp_path / DATABASE) as db:
        assert db.execute("SELECT COUNT(*) FROM checks").fetchone() == (0,)


def test_threads_record_side_by_side(tmp_path):
    store = CampaignStore.open(tmp_path)
    threads = [threading.Thread(target=lambda n=n: [store.record(_row(trial=n * 10 + i + 1)) for i in range(10)])
               for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.trial for r in store.rows()) == list(range(1, 41))
    store.close()


def test_another_schema_or_a_non_database_is_refused(tmp_path):
    CampaignStore.open(tmp_path).close()
    with sqlite3.connect(tmp_path / DATABASE) as db:
        db.execute("UPDATE meta SET value = 'arenac.campaign-results/v0'")
    with pytest.raises(StoreError, match=r"is of schema arenac\.campaign-results/v0"):
        CampaignStore.open(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / DATABASE).write_text("not a database, though its name says so\n" * 100)
    with pytest.raises(StoreError, match="not a database"):
        CampaignStore.open(other)
