"""Plans the `arenac harness` tests run their commands on (tests/harness/): which tasks are
compiled for them, and what tells one plan from another."""

from __future__ import annotations

# a runtime fault at the start (admin calls), a chart-layer fault's workload trigger (a send burst),
# a runtime fault that holds a database session open (a leaked lock)
TASKS = ("tasks/slow-reads.arena", "tasks/duplicate-sequence.arena", "tasks/leaked-lock.arena")


def runtime_at_start(plan: dict) -> bool:
    return any(f["layer"] == "runtime" and f["onset"]["kind"] == "at_start" for f in plan["faults"])


def chart_layer_burst(plan: dict) -> bool:
    return any(f["layer"] != "runtime" and any(a["kind"] == "send_burst" for a in f["inject"]) for f in plan["faults"])


def holds_a_session(plan: dict) -> bool:
    return any(f["layer"] == "runtime" and any(a.get("hold_open") for a in f["inject"]) for f in plan["faults"])


def runs_sql(plan: dict) -> bool:
    return any(a["kind"] == "sql" for f in plan["faults"] for a in f["inject"])
