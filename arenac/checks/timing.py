"""Sound timing: when the runner fires what a spec schedules (docs/runner.md, "An episode").

Contract:
- `recur = after declare + D` must land inside the soak for every declaration time the window
  allows (E0520). The soak starts at the first load-cycle boundary after the freeze, so between
  the declaration and the soak's start lies more than nothing and at most one cycle: the
  recurrence is inside the soak whatever the declaration time exactly when
  `cycle <= D < soak` (the latest soak start is one cycle after the declaration, the earliest
  end is one soak after it). The freeze itself (a fraction of a real second) is left out: a
  recurrence at exactly one cycle can fire that long before the soak in the worst alignment.
- An onset in the agent's window (`after agent start + D`) must leave the fault its manifestation
  bound before the window ends, or the agent could never see it (E0526; per variant, where the
  template's bound is known: validate.py).
- An onset other than `at start` on a fault none of whose layers is `runtime` is an error (E0521):
  config- and image-layer faults are in the bundle's chart, active from provisioning, and the
  runner cannot delay them. A fault that also has a runtime layer keeps its onset for its runtime
  cells; in its config and image cells it is active from provisioning (docs/language.md).
"""

from __future__ import annotations

from arenac.core.diagnostics import Collector
from arenac.core.units import format_seconds
from arenac.lower.task import LoweredTask

# how an onset of each kind reads in a message
_ONSET_WORDS = {"after": "a delayed onset (`after`)", "every": "a periodic onset (`every`)",
                "when": "a conditional onset (`when`)",
                "in_window": "an onset in the agent's window (`after agent start`)"}


def check_timing(lowered: LoweredTask, errors: Collector) -> None:
    """E0520 for each recurrence that can miss the soak, E0521 for each onset a layer ignores."""
    spec, spans = lowered.spec, lowered.spans
    cycle, soak = spec.load.cycle_s, spec.soak_s
    for fault in spec.faults:
        delay = fault.recur_after_declare_s
        if delay is not None and delay < min(cycle, soak):  # at or after the soak's end: E0501
            errors.error("E0520", f"fault '{fault.name}' recurs {format_seconds(delay)} after the declaration, "
                         f"which can be before the soak starts: the soak waits for the next load cycle "
                         f"(up to {format_seconds(cycle)} in '{spec.load.name}')", spans.recurs[fault.name],
                         _recur_hint(cycle, soak))
        if fault.onset.kind != "at_start" and "runtime" not in fault.layers:
            layers = " | ".join(fault.layers)
            errors.error("E0521", f"fault '{fault.name}' has {_ONSET_WORDS[fault.onset.kind]}, but its layer "
                         f"({layers}) is in the chart from provisioning, so the onset could never apply",
                         spans.onsets.get(fault.name, spans.task),
                         "drop the onset (the fault is active from the start), or add `runtime` to its layers")


def _recur_hint(cycle: float, soak: float) -> str:
    if cycle < soak:
        return (f"recur at least one load cycle and less than the soak after the declaration, from "
                f"{format_seconds(cycle)} to under {format_seconds(soak)}: "
                f"`recur = after declare + {format_seconds(cycle)}`")
    return f"lengthen `soak` beyond one load cycle ({format_seconds(cycle)}), then recur at least one cycle after"


__all__ = ["check_timing"]
