"""Specs that cannot silently void (arenac/checks/voids.py): a pool the load never exhausts is a
warning (E0522) at the knob argument; a pool it can exhaust, a decoy, or a spec with errors is not."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from arenac.cli import main
from arenac.core.diagnostics import DiagnosticError
from helpers.specs import MINIMAL, compile_text

AUDIT = """task t {
  title = "Opening channels fails during busy periods"
  substrate = spine
  instruction = "Opening a channel is slow at busy times. Fix it, then declare."
  fault pool = spine.pool_size(service: channel, size: NN, route: read) {
    layer = config | runtime
  }
  HOLD
  access = shell
  gate outcome = standard_outcome(route: read)
  gate safety {
    changes only config(channel.DB_POOL_SIZE, channel.DB_POOL_OVERFLOW)
  }
  oracle {
    repair pool
    declare
  }
}
"""
STRICT = "fault audit = spine.strict_read(service: channel, hold: 400ms) {\n    layer = config\n  }"


def warnings(text: str) -> list:
    return [w for task in compile_text(text).tasks for w in task.warnings if w.code == "E0522"]


def test_the_readmes_former_example_is_warned_at_its_size_and_still_compiles():
    (warning,) = warnings(MINIMAL)
    assert (warning.code, warning.severity) == ("E0522", "warning")
    assert (warning.span.line, warning.span.column) == (5, 56)  # `2` in `size: 2`
    assert "route 'send' keeps about 0.12 of message's database connections busy" in warning.message
    assert "a pool of 2 never runs out" in warning.message
    assert warning.hint is not None and warning.hint.startswith("no `size` can make it manifest")


def test_a_pool_that_a_holding_fault_makes_the_load_exhaust_is_not_warned():
    assert warnings(AUDIT.replace("NN", "5").replace("HOLD", STRICT)) == []


def test_the_same_pool_without_the_holding_fault_is_warned():
    (warning,) = warnings(AUDIT.replace("NN", "5").replace("HOLD", ""))
    assert "route 'read'" in warning.message and "a pool of 5" in warning.message


def test_a_pool_far_above_the_demand_names_the_size_that_would_manifest_once_for_both_layers():
    (warning,) = warnings(AUDIT.replace("NN", "40").replace("HOLD", STRICT))  # two cells, one warning
    assert "about 8.5 of channel's database connections" in warning.message
    assert warning.hint == "set `size` below 8.49, e.g. `size: 4`"


def test_a_decoy_pool_is_not_expected_to_manifest_and_is_not_warned():
    text = AUDIT.replace("NN", "5").replace("HOLD", STRICT)
    text = text.replace("  access = shell", "  decoy workers = spine.pool_size(service: fanout, size: 2) {\n"
                        "    layer = config\n  }\n  access = shell")
    assert warnings(text) == []


def test_a_spec_with_errors_reports_its_errors_only():
    with pytest.raises(DiagnosticError) as raised:
        compile_text(MINIMAL.replace("route: send)", "route: sned)"))
    assert "E0522" not in {d.code for d in raised.value.diagnostics}


def test_check_prints_the_warning_and_exits_zero(tmp_path):
    spec = tmp_path / "minimal.arena"
    spec.write_text(MINIMAL)
    result = CliRunner().invoke(main, ["check", str(spec)])
    assert result.exit_code == 0
    assert "warning[E0522]" in result.stderr and result.stderr.rstrip().endswith("1 warning")
    assert result.stdout == "ok: 1 task(s), 1 variant(s)\n"
    as_json = CliRunner().invoke(main, ["check", "--format", "json", str(spec)])
    (line,) = as_json.stderr.splitlines()
    assert as_json.exit_code == 0 and json.loads(line)["severity"] == "warning" and as_json.stdout == ""
