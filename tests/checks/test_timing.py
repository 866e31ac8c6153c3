"""Sound timing (arenac/checks/timing.py): a recurrence lands inside the soak whatever the
declaration time (E0520), and an onset is one the fault's layers can honour (E0521)."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import compile_text

SPEC = """task t {
  title = "Channels load slowly during an audit"
  substrate = spine
  instruction = "Opening a channel is slow. Fix it, then declare."
  SOAK
  fault pool = spine.pool_size(service: channel, size: 5, route: read) {
    layer = config
  }
  fault audit = spine.strict_read(service: channel, hold: 400ms) {
    layer = LAYER
    ONSET
  }
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


def spec(onset: str = "onset = at start", layer: str = "config", soak: str = "soak = 2m") -> str:
    return SPEC.replace("ONSET", onset).replace("LAYER", layer).replace("SOAK", soak)


def codes(text: str) -> list[tuple[str, int, str, str | None]]:
    try:
        compile_text(text)
    except DiagnosticError as raised:
        return [(d.code, d.span.line, d.message, d.hint) for d in raised.diagnostics]
    return []


@pytest.mark.parametrize("delay", ["1m", "90s", "119s"])
def test_a_recurrence_from_one_cycle_to_under_the_soak_is_accepted(delay):
    assert codes(spec(onset=f"recur = after declare + {delay}")) == []


@pytest.mark.parametrize("delay", ["1s", "30s", "59s"])
def test_a_recurrence_shorter_than_one_cycle_can_fire_before_the_soak(delay):
    (found,) = codes(spec(onset=f"recur = after declare + {delay}"))
    code, line, message, hint = found
    assert (code, line) == ("E0520", 11)
    assert f"recurs {delay} after the declaration" in message and "up to 1m in 'standard'" in message
    assert hint is not None and "from 1m to under 2m" in hint and "`recur = after declare + 1m`" in hint


def test_a_recurrence_at_or_after_the_soak_end_is_still_E0501_and_not_also_E0520():
    assert [c[0] for c in codes(spec(onset="recur = after declare + 2m"))] == ["E0501"]


def test_a_soak_of_exactly_one_cycle_leaves_no_valid_delay_and_says_so():
    (found,) = codes(spec(onset="recur = after declare + 30s", soak="soak = 1m"))
    assert found[0] == "E0520" and found[3] is not None and "lengthen `soak`" in found[3]


@pytest.mark.parametrize("onset, words", [
    ("onset = after 30s", "a delayed onset (`after`)"),
    ("onset = every 60s offset 10s for 30s", "a periodic onset (`every`)"),
])
def test_an_onset_on_a_fault_with_no_runtime_layer_is_an_error(onset, words):
    (found,) = codes(spec(onset=onset))
    code, line, message, hint = found
    assert (code, line) == ("E0521", 11)
    assert words in message and "(config) is in the chart from provisioning" in message
    assert hint is not None and "add `runtime` to its layers" in hint


@pytest.mark.parametrize("onset, layer", [
    ("onset = at start", "config"),  # what the chart does anyway
    ("onset = after 30s", "runtime"),
    ("onset = after 30s", "config | runtime"),  # applies to the runtime cells (docs/language.md)
])
def test_an_onset_some_layer_honours_is_accepted(onset, layer):
    assert codes(spec(onset=onset, layer=layer)) == []
