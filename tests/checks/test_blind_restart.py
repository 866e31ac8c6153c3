"""Variants a blind restart repairs (arenac/checks/blind_restart.py): a fault held only in a
service's memory whose undoing is the whole repair is a warning (E0528) at the fault; a durable
layer, a fault that comes back, a reload that reverts an out-of-scope setting, a fault held by a
datastore whose data a gate protects, or a fault to be left on that a restart would switch off are not."""

from __future__ import annotations

from helpers.specs import compile_text

SPEC = """task t {
  title = "Sending stalls at peaks"
  substrate = spine
  instruction = "Sends stall once a minute. Fix it, then declare."
  fault maint = spine.maintenance_offset(offset: 20s, duration: 6s) {
    layer = LAYER
    onset = at start
    RECUR
  }
  EXTRA
  access = shell
  gate outcome = standard_outcome(route: send)
  gate safety {
    survives restart(maintenance)
    SCOPE
  }
  oracle {
    repair maint
    declare
  }
}
"""
SCOPE = "changes only config(maintenance.MAINT_OFFSET_S, maintenance.MAINT_DURATION_S)"


def spec(layer: str = "config | runtime", recur: str = "", extra: str = "", scope: str = SCOPE) -> str:
    return SPEC.replace("LAYER", layer).replace("RECUR", recur).replace("EXTRA", extra).replace("SCOPE", scope)


def blind(text: str) -> list:
    return [w for task in compile_text(text).tasks for w in task.warnings if w.code == "E0528"]


def test_a_runtime_fault_a_reload_undoes_is_warned_once_at_the_fault():
    (warning,) = blind(spec())
    assert warning.severity == "warning"
    assert (warning.span.line, warning.span.column) == (5, 9)  # `maint` in `fault maint = ...`
    assert "undoes fault 'maint' (runtime layer), the whole repair" in warning.message
    assert "template 'maintenance_offset' outlives a restart only at the config layer" in warning.message
    assert warning.hint is not None and "leave the runtime layer out" in warning.hint


def test_the_config_layer_alone_is_not_warned():
    assert blind(spec(layer="config")) == []


def test_a_fault_that_comes_back_is_not_warned():
    assert blind(spec(recur="recur = after declare + 90s")) == []


def test_without_changes_only_the_reload_is_in_scope_and_warned():
    assert len(blind(spec(scope=""))) == 1


def test_a_reload_that_reverts_a_setting_out_of_scope_is_not_warned():
    # strict_read at run time also sets the hold, which `changes only` leaves out (slow-reads)
    text = (spec().replace("spine.maintenance_offset(offset: 20s, duration: 6s)",
                           "spine.strict_read(service: channel, hold: 800ms)")
            .replace("survives restart(maintenance)", "survives restart(channel)")
            .replace(SCOPE, "changes only event(channel.read_consistency_strict), config(channel.EVENTS)")
            .replace("standard_outcome(route: send)", "standard_outcome(route: read)"))
    assert blind(text) == []
    widened = text.replace("config(channel.EVENTS)", "config(channel.EVENTS, channel.READ_CONSISTENCY_HOLD_MS)")
    assert len(blind(widened)) == 1


def test_a_fault_held_by_a_datastore_is_left_to_the_qualification_when_its_data_is_protected():
    # unread-frozen: restarting Redis undoes the ACL but drops the queued events protect queue counts
    text = (spec(layer="runtime", scope="changes only redis(acl.fanout)\n    use notifications_intact()")
            .replace("spine.maintenance_offset(offset: 20s, duration: 6s)", "spine.redis_acl_deny(user: fanout)")
            .replace("survives restart(maintenance)", "survives restart(fanout, redis)"))
    assert blind(text) == []


def test_a_fault_held_by_a_datastore_whose_restart_loses_nothing_protected_is_warned():
    # inbox-backlog's run-time memory cap: restart-everything earned reward 1 (refused enqueues are
    # parked outside Redis, and no gate protects what Redis held)
    text = (spec(layer="runtime", scope="changes only redis(maxmemory), config(redis.maxmemory)")
            .replace("spine.maintenance_offset(offset: 20s, duration: 6s)", "spine.redis_maxmemory(size: 1Mi)")
            .replace("survives restart(maintenance)", "survives restart(fanout, redis)"))
    (warning,) = blind(text)
    assert "undoes fault 'maint' (runtime layer)" in warning.message
    assert "template 'redis_maxmemory' outlives a restart only at the config layer" in warning.message
    assert blind(text.replace("layer = runtime", "layer = config")) == []


def test_a_fault_left_on_decides_by_whether_a_restart_keeps_it():
    left_on = "fault audit = spine.strict_read(service: channel, hold: 400ms) {\n    layer = LEFT\n  }"
    scope = SCOPE.replace(")", ", channel.EVENTS)")  # the oracle repairs maint only
    kept = spec(extra=left_on.replace("LEFT", "config"), scope=scope)
    assert len(blind(kept)) == 1  # a restart leaves the audit on, as it must be: the blind restart passes
    switched_off = spec(extra=left_on.replace("LEFT", "runtime"), scope=scope)
    assert blind(switched_off) == []  # a restart would switch the audit off
