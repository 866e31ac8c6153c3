"""Guards richer than one target against a bound (`GuardExpr`): their evaluation over the snapshots.

Contract: `guard_expr(check, evidence)` evaluates the condition (model/guards.py's `evaluate`) at
each snapshot of `held_at`, as single guards are: it passes when the condition holds at each. A
target the snapshot has no value for reads as missing: a comparison over it is false and
`absent(target)` true. `observed` records, per snapshot, every target the condition reads (a
missing one as null); the detail lists them. `lookup` is how a guard reads one target in a
snapshot and `held_at` where a guard is held (single guards use both too): the snapshots its `at`
names, each required, or by default soak_end and, when the run has one, after_restart.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from arenac.model.actions import Target
from arenac.model.evidence import Snapshot
from arenac.model.gates import Guard, GuardExpr
from arenac.model.guards import MISSING, Reading, evaluate, targets_of
from arenac.model.verdict import Check
from arenac.verify.evidence import Evidence
from arenac.verify.scope import ABSENT, Absent, shown


def lookup(snapshot: Snapshot, target: Target) -> JsonValue | Absent:
    """The raw value of a guard's target in a snapshot, or ABSENT."""
    if target.kind == "config":
        service, _, key = target.ref.partition(".")
        return snapshot.config.get(service, {}).get(key, ABSENT) if key else ABSENT
    if target.kind == "role":  # one attribute; a flag reads as the name true or false
        role, _, attribute = target.ref.partition(".")
        value = snapshot.roles.get(role, {}).get(attribute, ABSENT) if attribute else ABSENT
        return ("true" if value else "false") if isinstance(value, bool) else value
    if target.kind == "event":  # on or off: whether the service has it switched on
        service, _, name = target.ref.partition(".")
        events = snapshot.events.get(service)
        return ABSENT if events is None or not name else ("on" if name in events else "off")
    tables: dict[str, Mapping[str, JsonValue]] = {
        "db_setting": snapshot.db_settings, "redis": snapshot.redis, "release": snapshot.release}
    table = tables.get(target.kind)
    return table.get(target.ref, ABSENT) if table is not None else ABSENT


def held_at(check: Guard | GuardExpr, evidence: Evidence) -> list[tuple[str, Snapshot]]:
    """(label, snapshot) of every snapshot the guard is held at."""
    if check.at:
        return [(label, evidence.snapshot(label)) for label in check.at]
    held = [("soak_end", evidence.snapshot("soak_end"))]
    after_restart = evidence.snapshot("after_restart", required=False)
    return held + [("after_restart", after_restart)] if after_restart is not None else held


def guard_expr(check: GuardExpr, evidence: Evidence) -> Check:
    observed: dict[str, JsonValue] = {}
    failures: list[str] = []
    readings: list[str] = []
    for label, snapshot in held_at(check, evidence):
        values = {target: lookup(snapshot, target) for target in targets_of(check.condition)}

        def read(target: Target, values: dict[Target, JsonValue | Absent] = values) -> Reading:
            value = values[target]
            return MISSING if value is ABSENT else value

        holds = evaluate(check.condition, read) is True
        observed[label] = {str(t): shown(v) for t, v in values.items()}
        readings.append(f"{label}: " + ", ".join(f"{t} = {'absent' if v is ABSENT else repr(v)}"
                                                 for t, v in values.items()))
        if not holds:
            failures.append(label)
    verdict = "holds" if not failures else f"does not hold at {', '.join(failures)}"
    return Check(kind="guard", text=check.text, passed=not failures, observed=observed, threshold=check.text,
                 detail=f"{verdict} ({'; '.join(readings)})")
