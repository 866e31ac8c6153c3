"""All files of one variant's bundle, in memory: `{relative path: text or bytes}`.

Contract: rendering sees only the variant, its substrate's descriptor and the substrate's chart
directory (vendored byte for byte); never syntax, the library loader or the lowering.
"""

from __future__ import annotations

from pathlib import Path

from arenac.core.serialize import dump_json, dump_yaml, model_data
from arenac.model.actions import Target, config_values, injected_targets, same_setting
from arenac.model.substrate import Substrate
from arenac.model.task import ConcreteFault, Variant
from arenac.render.chart import chart_files
from arenac.render.oracle import expectations, solve_script
from arenac.render.plan import build_plan
from arenac.render.rbac import rbac_objects
from arenac.render.text import render_text

EXECUTABLES = frozenset({"oracle/solve.sh", "verifier/verify.py"})

# what instruction.md says of each command on the agent's PATH, (how it is called, what it does):
# the plan's brokered tools, then the brokered `sleep` every agent gets
# (tests/render/test_instruction_tools.py keeps the list whole)
TOOL_HELP = {
    "admin-api": ("admin-api SERVICE METHOD PATH [JSON]", "a service's admin API, where you are granted it"),
    "db-sql": ("db-sql -c SQL", "SQL on the database (or SQL on stdin), as the role you are granted"),
    "declare_repair_complete": ("declare_repair_complete",
                                "run it once the repair is complete; you cannot act afterwards"),
    "kubectl": ("kubectl", "the cluster, with what your role is granted"),
    "time-left": ("time-left", "how much of your time is gone and how much is left; declaring early ends "
                               "your time, never the soak that follows it"),
    "wait-until-healthy": ("wait-until-healthy [--timeout 60s]",
                           "waits until every service is ready and a message can be sent"),
}
SLEEP_HELP = ("sleep SECONDS", "waits on the episode's clock (time-left counts the same seconds)")


def bundle_files(variant: Variant, substrate: Substrate, chart_dir: Path) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    files.update(chart_files(variant, substrate, chart_dir))
    for obj in rbac_objects(variant.access, variant.task, variant.id):
        files[f"rbac/{obj['kind'].lower()}.yaml"] = dump_yaml(obj)
    plan = build_plan(variant, substrate)
    files["plan.json"] = dump_json(model_data(plan))
    files["verifier/gates.json"] = dump_json({
        "task": variant.task,
        "variant": variant.id,
        "gates": model_data(variant.spec.gates),
        "challenges": model_data(plan.challenges),
        "baseline": f"{variant.spec.substrate}/{variant.spec.load.name}",
        "repairs": oracle_repairs(variant),
    })
    files["verifier/verify.py"] = render_text("verify.py.j2", task=variant.task, variant=variant.id)
    files["oracle/solve.sh"] = solve_script(variant, substrate)
    files["oracle/expectations.json"] = dump_json(expectations(variant))
    files["instruction.md"] = render_text(
        "instruction.md.j2", title=variant.spec.title, instruction=variant.spec.instruction,
        tools=[TOOL_HELP[tool] for tool in plan.tools] + [SLEEP_HELP],
        source_paths=variant.access.source_paths,
    )
    return files


def oracle_repairs(variant: Variant) -> list[dict[str, object]]:
    """gates.json's `repairs` (model/evidence.py `OracleRepair`): each fault the oracle repairs, in
    its order, with the targets its repair and its injection change; the failure taxonomy reads them
    from the evidence (docs/campaign.md, "Failure classes"). A config key the injection set to the
    very value the repair writes (maintenance_offset's duration, injected at its healthy 6 s and
    written again by the repair) is not among the repair's targets: the repair does not change it,
    so no agent needs to for a full fix."""
    faults = {fault.name: fault for fault in variant.faults}
    repaired = dict.fromkeys(step.target for step in variant.spec.oracle if step.kind == "repair" and step.target)
    return [{"fault": name, "layer": faults[name].layer,
             "targets": [model_data(target) for target in _changed_by_repair(faults[name])],
             "injected": [model_data(target) for target in injected_targets(faults[name].inject)]}
            for name in repaired]


def _changed_by_repair(fault: ConcreteFault) -> list[Target]:
    injected = config_values(fault.inject)
    repaired = config_values(bound.action for bound in fault.repair)
    return [target for target in fault.touches
            if not (str(target) in injected and str(target) in repaired
                    and same_setting(injected[str(target)], repaired[str(target)]))]
