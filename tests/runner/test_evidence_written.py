"""The runner writes its evidence from the models the verifier reads (arenac/model/evidence.py),
with the bytes docs/evidence.md documents: a field the format says is absent while empty stays
absent, every other one is written (null included). No stack here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from arenac.core.serialize import dump_json
from arenac.model.evidence import (
    AckedSoakEnd,
    ChallengeRecord,
    ChallengeRestart,
    MessagesAtSoakEnd,
    PartUnreadable,
    RecordedWindow,
    SequenceState,
    Snapshot,
    TableState,
    Timeline,
    TimelineHeadroom,
)
from arenac.runner.records import write_model


def _written(tmp_path, model) -> str:
    path = tmp_path / "record.json"
    write_model(path, model)
    return path.read_text()


def test_a_void_timeline_leaves_out_the_times_it_never_reached(tmp_path):
    timeline = Timeline.begun(0.1, "cgroup")  # as run_episode starts it
    timeline = timeline.model_copy(update={"warmup_end_s": 20.0, "handover_s": 20.512})  # as _Episode._mark
    timeline = timeline.ended("void", "fault 'grant' did not manifest within 30s of its onset")
    timeline = timeline.model_copy(update={"headroom": TimelineHeadroom(overloaded=False, timer_p99_ms=1.5)})
    # what the runner wrote as a dict before the models
    assert _written(tmp_path, timeline) == dump_json({
        "time_scale": 0.1, "status": "void", "void_reason": "fault 'grant' did not manifest within 30s of its onset",
        "declared_s": None, "bound_by": "cgroup", "warmup_end_s": 20.0, "handover_s": 20.512,
        "headroom": {"overloaded": False, "timer_p99_ms": 1.5, "loadgen_p99_start_lag_ms": None,
                     "episode_cpu_cores": None, "episode_pressure_share": None, "machine_psi_share": None,
                     "own_load": False}})
    assert Timeline.model_validate_json(_written(tmp_path, timeline)) == timeline


def test_a_scored_timeline_needs_every_time_and_refuses_an_unknown_field():
    with pytest.raises(ValidationError, match="a scored trial needs warmup_end_s"):
        Timeline.model_validate({"time_scale": 0.1, "status": "scored"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Timeline.model_validate({"time_scale": 0.1, "status": "void", "note": "the runner's own"})


def _snapshot(**fields) -> Snapshot:
    return Snapshot(t=12.5, config={"message": {"DB_POOL_SIZE": "16"}}, events={"channel": ("slow_reads",)},
                    release={"message": "message-1.4.2"}, db_settings={}, redis={"maxmemory": "0"},
                    tables={"messages": TableState(rows=3, checksum="ab")},
                    sequences={"messages.seq": SequenceState(groups=1, rows=3, duplicates=0, gaps=0)}, **fields)


def test_a_snapshot_without_the_stack_has_no_configmaps_and_never_a_format_1_grants(tmp_path):
    written = json.loads(_written(tmp_path, _snapshot()))
    assert "configmaps" not in written and "grants" not in written
    assert written["events"] == {"channel": ["slow_reads"]} and written["app_role"] == "spine_app"
    with_stack = json.loads(_written(tmp_path, _snapshot(configmaps={"message": {"DB_POOL_SIZE": "16"}})))
    assert with_stack["configmaps"] == {"message": {"DB_POOL_SIZE": "16"}}


def test_a_format_1_snapshot_still_reads():
    old = _snapshot().model_dump(mode="json", exclude={"app_role", "roles", "memberships", "privileges"})
    old["grants"] = {"messages": ["INSERT", "SELECT"]}
    assert Snapshot.model_validate(old).grants == {"messages": ("INSERT", "SELECT")}


def test_challenges_name_the_re_check_windows_only_when_there_were_some(tmp_path):
    none = ChallengeRecord(restart=(), retrigger=())
    assert json.loads(_written(tmp_path, none)) == {"restart": [], "retrigger": []}
    restarted = ChallengeRecord(restart=(ChallengeRestart(service="message", t=262.0, ok=True),), retrigger=(),
                                after_restart=RecordedWindow(start_s=270.0, end_s=300.0))
    assert json.loads(_written(tmp_path, restarted)) == {
        "restart": [{"service": "message", "t": 262.0, "ok": True}], "retrigger": [],
        "after_restart": {"start_s": 270.0, "end_s": 300.0}}


def test_a_part_the_substrate_refused_is_its_error(tmp_path):
    record = AckedSoakEnd(t=261.0, messages=MessagesAtSoakEnd(after_id=5000, rows={"5001": "ab"}),
                          fanout=PartUnreadable(error="ConnectionError: redis"))
    written = json.loads(_written(tmp_path, record))
    assert written == {"t": 261.0, "messages": {"after_id": 5000, "rows": {"5001": "ab"}},
                       "fanout": {"error": "ConnectionError: redis"}}
    assert AckedSoakEnd.model_validate(written) == record


def test_the_model_layer_imports_none_of_runner_verify_or_loadgen():
    models = ("evidence", "headroom", "loadgen", "record", "report", "run", "verdict")
    probe = (f"import sys; import {', '.join('arenac.model.' + m for m in models)}; "
             "print(sorted(m for m in sys.modules if m.startswith(("
             "'arenac.runner', 'arenac.verify', 'arenac.loadgen', 'arenac.substrate'))))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"


def test_a_finished_timeline_is_the_one_the_verifier_reads():
    marks = {"warmup_end_s": 20.0, "handover_s": 40.0, "window_end_s": 140.0, "soak_start_s": 140.0,
             "soak_end_s": 260.0}
    scored = Timeline.begun(0.1, "cgroup").model_copy(update=marks).finished()
    assert scored.status == "scored" and scored.void_reason is None and scored.soak_end_s == 260.0
    # a harness that forgot a mark: never a scored trial the verifier would refuse
    incomplete = Timeline.begun(0.1, "cgroup").model_copy(update={**marks, "soak_end_s": None}).finished()
    assert incomplete.status == "infra_error"
    assert incomplete.void_reason == ("the harness recorded an incomplete timeline: "
                                      "Value error, a scored trial needs soak_end_s")
