"""The compiler's side of issue 9, class 4: exact privileges in `changes only` (E0512) and restart
challenges that can prove a datastore repair durable (E0513), each on both sides."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.model.actions import Target
from arenac.model.gates import ChangesOnly, SurvivesRestart
from helpers.specs import compile_text

GRANT = """
task g {
  title = "G"
  substrate = spine
  instruction = \"\"\"
    Sends fail.
  \"\"\"
  fault grant = spine.revoked_grant(table: messages, privilege: INSERT) {
    layer = runtime
  }
  access = confined
  gate outcome {
    error_rate(send) <= 1%
  }
  gate safety {
    survives restart(message)
    changes only SCOPE
  }
}
"""

REDIS = """
task r {
  title = "R"
  substrate = spine
  instruction = \"\"\"
    Unread counts lag.
  \"\"\"
  fault memory = spine.redis_maxmemory(size: 1Mi) {
    layer = LAYER
  }
  access = shell
  gate outcome {
    backlog(fanout) <= 10 within 30s
  }
  gate safety {
    RESTART
    changes only redis(maxmemory), config(redis.maxmemory)
  }
}
"""


def codes(text: str) -> list[str]:
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    return [d.code for d in raised.value.diagnostics]


def scope_of(text: str) -> tuple[Target, ...]:
    (task,) = compile_text(text).tasks
    (check,) = [c for c in task.lowered.spec.gates.safety if isinstance(c, ChangesOnly)]
    return check.targets


# ---- exact privileges -------------------------------------------------------------------
def test_a_grant_names_its_privileges():
    assert scope_of(GRANT.replace("SCOPE", "grant(messages, INSERT)")) == (Target(kind="grant", ref="messages.INSERT"),)
    assert [str(t) for t in scope_of(GRANT.replace("SCOPE", "grant(messages, INSERT, select)"))] == [
        "grant(messages.INSERT)", "grant(messages.SELECT)"]


def test_a_grant_without_a_privilege_is_an_error():
    with pytest.raises(DiagnosticError) as raised:
        compile_text(GRANT.replace("SCOPE", "grant(messages)"))
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0512" and "GRANT ALL" in diagnostic.message
    assert diagnostic.hint == "name the privileges the repair grants, e.g. grant(messages, INSERT)"


def test_an_unknown_privilege_is_an_error():
    assert codes(GRANT.replace("SCOPE", "grant(messages, INSRT)")) == ["E0203"]


def test_the_oracle_granting_another_privilege_is_outside_the_scope():
    """The template's repair grants INSERT: a scope of SELECT does not cover it (E0509)."""
    assert codes(GRANT.replace("SCOPE", "grant(messages, SELECT)")) == ["E0509"]


@pytest.mark.parametrize("scope, target", [("role(spine_app)", "role(spine_app)"),
                                           ("role(spine_app.superuser)", "role(spine_app.superuser)"),
                                           ("membership(spine_app.pg_write_all_data)",
                                            "membership(spine_app.pg_write_all_data)")])
def test_roles_and_memberships_are_targets(scope, target):
    text = GRANT.replace("SCOPE", f"grant(messages, INSERT), {scope}")
    assert str(scope_of(text)[1]) == target


@pytest.mark.parametrize("scope", ["role(nobody)", "role(spine_app.god_mode)", "membership(nobody)"])
def test_unknown_roles_and_attributes_are_errors(scope):
    assert codes(GRANT.replace("SCOPE", f"grant(messages, INSERT), {scope}")) == ["E0203"]


# ---- durability of datastore run-time state ------------------------------------------------
@pytest.mark.parametrize("layer", ["config", "runtime"])
def test_a_restart_that_leaves_out_redis_cannot_prove_a_redis_repair_durable(layer):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(REDIS.replace("LAYER", layer).replace("RESTART", "survives restart(fanout)"))
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0513"
    assert "acts on redis" in diagnostic.message
    assert diagnostic.hint == "restart redis too: `survives restart(fanout, redis)`"


@pytest.mark.parametrize("layer", ["config", "runtime"])
@pytest.mark.parametrize("restart", ["survives restart(fanout, redis)", "survives restart(redis)"])
def test_restarting_redis_proves_it_and_is_planned(layer, restart):
    from arenac.lower.library import load_library
    from arenac.render.plan import build_plan
    from arenac.variants import built

    (task,) = compile_text(REDIS.replace("LAYER", layer).replace("RESTART", restart)).tasks
    library = load_library()
    (variant,) = built(task.lowered.spec, library)
    plan = build_plan(variant, library.substrates["spine"].descriptor)
    assert "redis" in plan.challenges.restart


def test_no_restart_challenge_asks_for_no_durability():
    (task,) = compile_text(REDIS.replace("LAYER", "config").replace("RESTART", "")).tasks
    assert not any(isinstance(c, SurvivesRestart) for c in task.lowered.spec.gates.safety)


def test_a_postgres_repair_needs_no_restart_of_postgres():
    """PostgreSQL keeps a GRANT across its restarts: restarting the app services is enough."""
    compile_text(GRANT.replace("SCOPE", "grant(messages, INSERT)"))


def test_a_decoy_on_redis_asks_for_nothing():
    text = REDIS.replace("LAYER", "config").replace("RESTART", "survives restart(fanout)").replace(
        "fault memory", "decoy memory").replace("changes only redis(maxmemory), config(redis.maxmemory)",
                                                "changes only config(fanout.FANOUT_BATCH)")
    text = text.replace("  access = shell", "  fault batch = spine.pool_size(service: message, size: 2) {\n"
                        "    layer = runtime\n  }\n  access = shell")
    text = text.replace("config(fanout.FANOUT_BATCH)", "config(message)")
    compile_text(text)
