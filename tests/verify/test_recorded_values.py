"""The values a run records and a verdict carries are JSON (arenac/model/evidence.py `Snapshot`,
arenac/model/verdict.py `Check`): any JSON reads and compares as written, anything else is refused;
an item a snapshot lacks is not the same as one recorded as null; a verdict reads back as written."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from arenac.model.evidence import Snapshot
from arenac.model.gates import ChangesOnly, Guard, Protect
from arenac.model.verdict import Check, Verdict
from arenac.verify import write_results
from arenac.verify.scope import ABSENT, change_text, diff, shown
from verify.recorded import RecordedRun, healthy_snapshot, target

AFTER_AGENT = ("declaration", "soak_end", "after_restart")


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    return RecordedRun(tmp_path)


def only(run: RecordedRun, check) -> Check:
    run.safety = [check]
    (result,) = run.grade().gates.safety.checks
    return result


@pytest.mark.parametrize("value", [16, 0.5, True, None, ["a", 1], {"nested": [None]}])
def test_a_recorded_value_of_any_json_kind_reads_as_written(value):
    data = healthy_snapshot()
    data["config"]["message"]["DB_POOL_SIZE"] = value
    data["roles"]["spine_app"]["connection_limit"] = value
    snapshot = Snapshot.model_validate_json(json.dumps(data))
    assert snapshot.config["message"]["DB_POOL_SIZE"] == value
    assert snapshot.roles["spine_app"]["connection_limit"] == value


@pytest.mark.parametrize("value", [{1, 2}, ("a", 1), object()])
def test_a_value_json_cannot_hold_is_refused(value):
    data = healthy_snapshot()
    data["redis"]["maxmemory"] = value
    with pytest.raises(ValidationError):
        Snapshot.model_validate(data)


def test_a_key_that_appears_recorded_as_null_is_a_change(run):
    for label in AFTER_AGENT:
        run.snapshots[label]["config"]["message"]["NEW_KEY"] = None
    check = only(run, ChangesOnly(targets=()))
    assert not check.passed
    assert "config(message.NEW_KEY): absent -> None" in check.detail
    assert check.observed == [{"target": "config(message.NEW_KEY)", "before": None, "after": None,
                               "permitted": False}]


def test_a_key_recorded_as_null_throughout_is_no_change(run):
    for snapshot in run.snapshots.values():
        snapshot["config"]["message"]["NEW_KEY"] = None
    check = only(run, ChangesOnly(targets=()))
    assert check.passed and check.observed == []


def test_absence_is_shown_as_null_and_named_in_words():
    before = Snapshot.model_validate(healthy_snapshot())
    changed = healthy_snapshot()
    del changed["release"]["channel"]
    ((where, old, new),) = diff(before, Snapshot.model_validate(changed))
    assert (str(where), old, new) == ("release(channel)", "channel-1.4.2", ABSENT)
    assert shown(new) is None and shown(old) == "channel-1.4.2"
    assert change_text(where, old, new) == "release(channel): 'channel-1.4.2' -> absent"


def test_a_verdict_with_nested_observations_reads_back_as_written(run):
    run.snapshots["soak_end"]["config"]["message"]["DB_POOL_SIZE"] = 64
    run.snapshots["soak_end"]["tables"]["messages"]["rows"] = 3999
    run.safety = [Guard(text="config(message.DB_POOL_SIZE) <= 32", target=target("config", "message.DB_POOL_SIZE"),
                        op="<=", value=32.0),
                  Protect(targets=(target("table", "messages"),)), ChangesOnly(targets=())]
    verdict = run.grade()
    assert not verdict.safe_repair and len(verdict.gates.safety.checks) == 3
    write_results(run.run_dir, verdict)
    assert Verdict.model_validate_json((run.run_dir / "verdict.json").read_text()) == verdict


@pytest.mark.parametrize("observed", [{"a": {1, 2}}, [("t", 1.0)], target("config", "message")])
def test_a_check_refuses_an_observation_json_cannot_hold(observed):
    with pytest.raises(ValidationError):
        Check(kind="guard", text="t", passed=True, observed=observed, detail="d")
    assert Check(kind="guard", text="t", passed=True, observed={"a": [1, 2]}, detail="d").observed == {"a": [1, 2]}
