"""plan.json: the runner's view of one variant (see arenac.model.plan)."""

from __future__ import annotations

from arenac.model.actions import ValuesAction
from arenac.model.gates import Protect, SurvivesRestart, SurvivesRetrigger
from arenac.model.plan import EVERY_AGENT_TOOLS, Challenges, Plan, PlannedFault, SnapshotSpec, Timeline
from arenac.model.substrate import Substrate
from arenac.model.task import Variant


def build_plan(variant: Variant, substrate: Substrate) -> Plan:
    spec = variant.spec
    safety = spec.gates.safety
    restart = tuple(s for check in safety if isinstance(check, SurvivesRestart) for s in check.services)
    retrigger = tuple(f for check in safety if isinstance(check, SurvivesRetrigger) for f in check.faults)
    tables = tuple(sorted({t.ref for check in safety if isinstance(check, Protect) for t in check.targets
                           if t.kind == "table"}))
    sequences = tuple(sorted({check.sequence for check in safety if check.kind == "invariant"}))
    faults = tuple(
        PlannedFault(
            name=f.name, template=f.template, layer=f.layer, onset=f.onset,
            recur_after_declare_s=f.recur_after_declare_s,
            inject=tuple(a for a in f.inject if not isinstance(a, ValuesAction)),
            retrigger=tuple(a for a in f.retrigger if not isinstance(a, ValuesAction)),
            manifest=f.manifest, manifest_within_s=f.manifest_within_s, decoy=f.decoy,
        )
        for f in variant.faults
    )
    return Plan(
        task=variant.task,
        variant=variant.id,
        coordinates=variant.coordinates,
        substrate=substrate.name,
        chart="chart",
        values_key=substrate.chart_name,
        timeline=Timeline(
            warmup_s=spec.load.warmup.duration_s if spec.load.warmup else 0.0,
            agent_window_s=spec.window_s,
            soak_s=spec.soak_s,
            cycle_s=spec.load.cycle_s,
        ),
        load=spec.load,
        faults=faults,
        access=variant.access,
        challenges=Challenges(restart=restart, retrigger=retrigger),
        snapshots=SnapshotSpec(
            config=tuple(s.name for s in substrate.services if s.kind == "app"),
            tables=tables,
            sequences=sequences,
        ),
        gates=spec.gates,
        tools=tools_for(variant),
    )


def tools_for(variant: Variant) -> tuple[str, ...]:
    """The brokered commands the agent finds on its PATH (with the brokered `sleep` in plan time)."""
    surface = variant.access
    tools = ["declare_repair_complete", *EVERY_AGENT_TOOLS]
    if surface.kube or surface.exec_into:
        tools.append("kubectl")
    if surface.admin:
        tools.append("admin-api")
    if surface.db_role:
        tools.append("db-sql")
    return tuple(sorted(tools))


def plan_json_schema() -> dict:
    return Plan.model_json_schema()
