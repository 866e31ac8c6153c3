"""The application role's connection limit as a fault (faults/role_connection_limit.yaml): a
run-time `ALTER ROLE spine_app CONNECTION LIMIT n` that ends the role's sessions so the pools
reconnect into it, repaired by the operator restoring roles.sql's limit; both touch the attribute
snapshots record, `role(spine_app.connection_limit)`, so `changes only` and a guard can name it.
The live side (it manifests, its repair passes) is tests/runner/test_db_role_faults.py."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.model.actions import Target
from helpers.specs import built_variants, compile_text

SPEC = """task t {
  title = "Requests fail"
  substrate = spine
  instruction = "Requests fail. Fix it, then declare."
  fault limit = spine.role_connection_limit(limit: LIMIT)
  access = confined
  gate outcome {
    error_rate <= 1%
  }
  gate safety {
    changes only role(spine_app.connection_limit)
    guard role(spine_app.connection_limit) >= 20 at declaration
  }
}
"""


def test_the_limit_is_set_at_run_time_and_restored_by_the_operator():
    [variant] = built_variants(compile_text(SPEC.replace("LIMIT", "2")).tasks[0])
    [fault] = variant.faults
    assert fault.layer == "runtime" and fault.manifest.text == "error_rate > 1%"
    limit = Target(kind="role", ref="spine_app.connection_limit")
    set_limit, end_sessions = fault.inject
    assert set_limit.statement == "ALTER ROLE spine_app CONNECTION LIMIT 2" and set_limit.touches == (limit,)
    assert "pg_terminate_backend" in end_sessions.statement and "'spine_app'" in end_sessions.statement
    [bound] = fault.repair
    restore = bound.action
    assert (restore.role, restore.statement) == ("spine_operator", "ALTER ROLE spine_app CONNECTION LIMIT 120")
    assert restore.touches == (limit,)


def test_a_limit_the_requests_never_run_into_is_out_of_range_with_the_reason():
    with pytest.raises(DiagnosticError) as caught:
        compile_text(SPEC.replace("LIMIT", "20"))
    [error] = caught.value.diagnostics
    assert (error.code, error.message) == ("E0308", "'limit' = 20 is out of range")
    assert error.hint.startswith("allowed: 0 to 2 (a larger limit may lock out only fanout and maintenance")
