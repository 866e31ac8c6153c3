"""The failure taxonomy (arenac/campaign/taxonomy.py, repair_state.py) on recorded evidence: every
class on both sides, each "does not apply" case a scored failure too (it fails for another reason),
the full fix on both sides and where it cannot be said, and unreadable evidence reported rather
than raised.

The recorded world (tests/verify/recorded.py, a healthy run edited here): the oracle repairs
fault `pool`, which set config(message.DB_POOL_SIZE) to 2 before the handover (agent_start); the
agent worked under load from the handover (40) to its declaration (90); the soak is [140, 260).
"""

from __future__ import annotations

import json

import pytest

from arenac.campaign.taxonomy import CLASSES, TaxonomyError, analyse, classify, full_fix
from arenac.model.gates import ChangesOnly, Guard, Protect, SurvivesRestart, SurvivesRetrigger
from verify.recorded import RecordedRun, target

POOL_SIZE = target("config", "message.DB_POOL_SIZE")
AFTER_AGENT = ("declaration", "after_restart", "soak_end")
# a failure the agent's repair has nothing to do with: the healthy READ_TIMEOUT is 500ms
OTHER_FAILURE = Guard(text="config(channel.READ_TIMEOUT) <= 100ms", target=target("config", "channel.READ_TIMEOUT"),
                      op="<=", value=0.1)
DUPLICATES_SAFE = Protect(targets=(target("sequence", "messages.seq"),))


def repair(fault: str = "pool", targets=(POOL_SIZE,), injected=(POOL_SIZE,)) -> dict:
    return {"fault": fault, "layer": "runtime", "targets": [t.model_dump() for t in targets],
            "injected": [t.model_dump() for t in injected]}


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    """The agent repaired the fault (DB_POOL_SIZE back to 16 from the declaration on) and passes."""
    run = RecordedRun(tmp_path)
    run.repairs = [repair()]
    set_config(run, ("agent_start",), "DB_POOL_SIZE", "2")
    run.traffic("send", 40, 100)  # the load while the agent worked: clean, it repaired early
    return run


def set_config(run: RecordedRun, labels, key: str, value: str, service: str = "message") -> None:
    for label in labels:
        run.snapshots[label]["config"][service][key] = value


def classes(run: RecordedRun) -> tuple[str, ...]:
    return classify(run.graded())


def fails_otherwise(run: RecordedRun) -> RecordedRun:
    run.safety.append(OTHER_FAILURE)
    return run


# ---- no class for what is not a scored failure ----------------------------------------------
def test_a_pass_has_no_class(run):
    assert run.grade().reward == 1
    assert classes(run) == ()


@pytest.mark.parametrize("status", ["void", "infra_error"])
def test_a_trial_that_was_not_scored_has_no_class(run, status):
    run.timeline.update(status=status, void_reason="the fault never showed")
    fails_otherwise(run)
    assert classes(run) == ()
    assert full_fix(run.run_dir) is None


def test_a_failure_for_another_reason_has_only_its_own_class(run):
    fails_otherwise(run)
    assert classes(run) == ("guard-violation",)


# ---- each class, both sides -------------------------------------------------------------------
def test_premature_declaration_when_the_symptoms_were_there_at_the_declaration(run):
    fails_otherwise(run)
    run.traffic("send", 40, 90, errors=6)  # still failing over [60, 90), the load before the declaration
    assert "premature-declaration" in classes(run)


def test_no_premature_declaration_when_the_repair_held_before_the_declaration(run):
    fails_otherwise(run)
    run.traffic("send", 40, 55, errors=6)  # failing at first, clean from 55 on: [60, 90) is clean
    assert "premature-declaration" not in classes(run)


def test_no_premature_declaration_without_load_before_the_declaration(run):
    fails_otherwise(run)
    for t in range(40, 100):
        run.requests[(t, "send")] = []  # an undefined predicate is no evidence of symptoms
    assert "premature-declaration" not in classes(run)


def test_exhaustion_when_the_agent_never_declared(run):
    run.timeline["declared_s"] = None
    run.traffic("send", 140, 260, errors=6)
    assert {"exhaustion", "outcome-not-restored"} <= set(classes(run))


def test_no_exhaustion_when_the_agent_declared(run):
    run.traffic("send", 140, 260, errors=6)
    assert "exhaustion" not in classes(run)


def test_outcome_not_restored_when_the_soak_fails(run):
    run.traffic("send", 140, 260, errors=6)
    assert "outcome-not-restored" in classes(run)


def test_outcome_restored_when_only_safety_fails(run):
    assert "outcome-not-restored" not in classes(fails_otherwise(run))


def test_lost_on_restart_when_the_soak_held_and_the_restart_brought_the_fault_back(run):
    run.safety = [SurvivesRestart(services=("message",))]
    run.traffic("send", 262, 320, errors=12)
    assert classes(run) == ("lost-on-restart",)


def test_not_lost_on_restart_when_it_was_never_restored(run):
    run.safety = [SurvivesRestart(services=("message",))]
    run.traffic("send", 140, 320, errors=12)  # failing in the soak already: nothing was lost
    found = classes(run)
    assert "outcome-not-restored" in found and "lost-on-restart" not in found


def test_lost_on_retrigger_when_the_soak_held_and_the_retrigger_brought_the_fault_back(run):
    run.safety = [SurvivesRetrigger(faults=("strict",))]
    run.challenges["after_retrigger"] = {"start_s": 290.0, "end_s": 320.0}
    run.traffic("send", 290, 320, errors=12)
    assert classes(run) == ("lost-on-retrigger",)


def test_not_lost_on_retrigger_when_the_retrigger_was_survived(run):
    run.safety = [SurvivesRetrigger(faults=("strict",))]
    run.challenges["after_retrigger"] = {"start_s": 290.0, "end_s": 320.0}
    assert "lost-on-retrigger" not in classes(fails_otherwise(run))


def test_scope_violation_when_a_change_is_not_permitted(run):
    run.safety = [ChangesOnly(targets=(target("config", "channel"),))]
    assert classes(run) == ("scope-violation",)


def test_no_scope_violation_when_every_change_is_permitted(run):
    run.safety = [ChangesOnly(targets=(target("config", "message"),))]
    assert "scope-violation" not in classes(fails_otherwise(run))


def test_guard_violation_when_a_guard_fails(run):
    assert classes(fails_otherwise(run)) == ("guard-violation",)


def test_no_guard_violation_when_only_data_is_damaged(run):
    run.safety = [DUPLICATES_SAFE]
    run.snapshots["soak_end"]["sequences"]["messages.seq"]["duplicates"] = 3
    assert classes(run) == ("data-damaged",)


def test_no_data_damaged_when_the_protected_data_is_whole(run):
    run.safety = [DUPLICATES_SAFE]
    assert "data-damaged" not in classes(fails_otherwise(run))


def test_residual_cause_when_the_symptoms_cleared_around_the_fault(run):
    # a workaround: the agent raised the overflow instead; the pool size the fault set is still 2
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    set_config(run, AFTER_AGENT, "DB_POOL_OVERFLOW", "64")
    run.safety = [ChangesOnly(targets=(POOL_SIZE,))]
    assert classes(run) == ("scope-violation", "residual-cause")


def test_no_residual_cause_when_the_fault_is_gone(run):
    assert "residual-cause" not in classes(fails_otherwise(run))


def test_no_residual_cause_while_the_symptoms_are_still_there(run):
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    run.traffic("send", 140, 260, errors=6)
    assert "residual-cause" not in classes(run)  # not restored: it is outcome-not-restored


def test_an_edit_only_in_the_configmap_leaves_the_fault_running(run):
    for label, snapshot in run.snapshots.items():
        running = snapshot["config"]["message"]["DB_POOL_SIZE"]
        snapshot["configmaps"] = {"message": {"DB_POOL_SIZE": "16" if label in AFTER_AGENT else running}}
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")  # run-time: never rolled out
    assert "residual-cause" in classes(fails_otherwise(run))
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "16")  # rolled out
    assert "residual-cause" not in classes(run)


def test_a_datastore_chart_value_is_a_residual_cause_while_its_live_setting_stays(run):
    """spine.redis_maxmemory at the config layer: gates.json records the live setting the chart value
    became (redis(maxmemory), the template's `touches`); an edit of Redis's ConfigMap alone leaves it."""
    memory = target("redis", "maxmemory")
    run.repairs = [repair(fault="memory", targets=(target("config", "redis.maxmemory"),), injected=(memory,))]
    for label, snapshot in run.snapshots.items():
        snapshot["redis"]["maxmemory"] = "1048576"  # Redis started capped and was never restarted
        snapshot["configmaps"] = {"redis": {"maxmemory": "256mb" if label in AFTER_AGENT else "1048576"}}
    assert "residual-cause" in classes(fails_otherwise(run))
    for label in AFTER_AGENT:  # restarted: the ConfigMap's setting is live
        run.snapshots[label]["redis"]["maxmemory"] = "268435456"
    assert "residual-cause" not in classes(run)


def test_no_residual_cause_is_said_without_the_oracles_repairs_or_a_held_injection(run):
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    fails_otherwise(run)
    assert "residual-cause" in classes(run)
    run.repairs = None  # a bundle compiled before gates.json recorded them
    assert "residual-cause" not in classes(run)
    run.repairs = [repair(fault="lock", injected=())]  # a held lock: nothing a snapshot holds
    assert "residual-cause" not in classes(run)


def test_no_change_when_the_agent_changed_nothing(run):
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    run.traffic("send", 140, 260, errors=6)
    assert {"no-change", "outcome-not-restored"} <= set(classes(run))


def test_a_change_is_not_no_change(run):
    assert "no-change" not in classes(fails_otherwise(run))


def test_broke_the_harness_when_a_harness_step_failed(run):
    run.timeline.update(status="failed", void_reason="restart of message: did not come back")
    assert classes(run) == ("broke-the-harness",)


def test_a_scored_failure_did_not_break_the_harness(run):
    assert "broke-the-harness" not in classes(fails_otherwise(run))


def test_classes_come_in_the_taxonomys_order(run):
    run.timeline["declared_s"] = None
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    run.traffic("send", 40, 260, errors=6)
    found = classes(run)
    assert found == tuple(name for name in CLASSES if name in found) and len(found) >= 3


# ---- full fix -----------------------------------------------------------------------------------
def test_a_full_fix_changes_every_target_of_the_oracles_repair(run):
    assert full_fix(run.graded()) is True
    fails_otherwise(run)  # a full fix that fails for another reason is still one
    assert full_fix(run.graded()) is True


def test_a_repair_that_leaves_a_target_untouched_is_no_full_fix(run):
    run.repairs = [repair(targets=(POOL_SIZE, target("config", "message.DB_POOL_OVERFLOW")))]
    assert full_fix(run.graded()) is False  # the agent never changed the overflow
    set_config(run, AFTER_AGENT, "DB_POOL_OVERFLOW", "12")
    assert full_fix(run.graded()) is True


def test_a_change_the_harness_made_is_not_the_agents_fix(run):
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "2")
    assert full_fix(run.graded()) is False
    set_config(run, AFTER_AGENT, "DB_POOL_SIZE", "16")
    run.harness_changes = [{"t": 60.0, "what": "periodic onset of pool", "targets": [str(POOL_SIZE)]}]
    assert full_fix(run.graded()) is False  # the harness changed it, and left it so


def test_a_full_fix_is_not_said_when_it_cannot_be_seen(run):
    run.repairs = None
    assert full_fix(run.graded()) is None
    run.repairs = [repair(targets=(target("session", "spine_app"),))]  # a killed session leaves no state
    assert full_fix(run.graded()) is None
    run.repairs = [repair(targets=(target("session", "spine_app"), POOL_SIZE))]  # the rest is judged
    assert full_fix(run.graded()) is True


# ---- unreadable evidence --------------------------------------------------------------------------
def test_unreadable_evidence_gives_no_class_and_the_reason(run):
    run.traffic("send", 140, 260, errors=6)
    run_dir = run.graded()
    (run_dir / "evidence" / "snapshots" / "soak_end.json").write_text("{not json")
    with pytest.raises(TaxonomyError, match=r"soak_end\.json"):
        classify(run_dir)
    analysis = analyse(run_dir)
    assert analysis.classes == () and analysis.full_fix is None and "soak_end.json" in analysis.problem


def test_a_run_without_a_verdict_is_unreadable(tmp_path):
    analysis = analyse(tmp_path)
    assert analysis.classes == () and "verdict.json" in analysis.problem


def test_analysis_of_a_failure_says_its_classes_and_its_full_fix(run):
    run.traffic("send", 140, 260, errors=6)
    analysis = analyse(run.graded())
    assert analysis.problem is None and analysis.full_fix is True
    assert analysis.classes == classify(run.run_dir) and "outcome-not-restored" in analysis.classes
    assert json.loads(analysis.model_dump_json())["full_fix"] is True
