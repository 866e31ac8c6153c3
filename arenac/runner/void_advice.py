"""What to move when a trial voids: the fault its reason names, that fault's symptom, the knob.

Contract: `void_advice(plan, reason)` reads a void reason as the episode records it (the
timeline's `void_reason`, e.g. "fault 'pool' did not manifest within 60s of its onset") and, when
it names a fault of the plan, says what never held (the template's manifestation predicate, as
the plan carries it) and which knob moves it: the arguments of that fault's template call, or its
onset. The plan carries no argument values (a config-layer fault's live in the chart), so the
advice names the call; `arenac check` names the argument itself where the substrate's baseline
decides it statically (E0522). Otherwise (a reason that names no fault of the plan) it is None.
"""

from __future__ import annotations

import re

from arenac.model.plan import Plan

_NAMED_FAULT = re.compile(r"fault '([^']+)'")


def void_advice(plan: Plan, reason: str) -> str | None:
    named = _NAMED_FAULT.search(reason)
    fault = next((f for f in plan.faults if named and f.name == named.group(1)), None)
    if fault is None:
        return None
    return (f"its symptom `{fault.manifest.text}` never held within {fault.manifest_within_s:g}s of the onset: "
            f"move an argument of `fault {fault.name} = {fault.template}(...)` (or its onset) until the load "
            f"shows it; `arenac check` names the argument where the baseline decides it (E0522)")


__all__ = ["void_advice"]
