"""tasks/deletes-fail.arena compiles as written: the load deletes (spine.standard_deletes), the revoked
DELETE manifests on the `delete` route, the gates judge deletes and tell the users' own deletions from
data loss, the confined and shell variants are built (scoped_kubectl cannot reach the database), and
the golden fix grants DELETE back. The standard profile, and the baseline calibrated with it, stay
as they were: the new profile is beside them."""

from __future__ import annotations

import json

from arenac.lower.library import load_library
from arenac.pipeline import compile_paths, render_task
from helpers import ROOT

TASK = "tasks/deletes-fail.arena"
STANDARD_MIX = {"send": 40.0, "read": 35.0, "unread": 15.0, "login": 5.0, "channels": 5.0}


def _bundles() -> dict[str, dict[str, str | bytes]]:
    compilation = compile_paths([str(ROOT / TASK)])
    (task,) = compilation.tasks
    source = compilation.sources[task.lowered.spec.source].text
    return {bundle.variant: bundle.files for bundle in render_task(task, compilation.library, source)}


def _json(files: dict[str, str | bytes], name: str) -> dict:
    data = files[name]
    return json.loads(data if isinstance(data, str) else data.decode())


def test_the_task_builds_its_database_variants_and_prunes_kubectl():
    compilation = compile_paths([str(ROOT / TASK)])
    (task,) = compilation.tasks
    assert sorted(dict(cell.coordinates)["access"] for cell in task.variants) == ["confined", "shell"]
    (pruned,) = task.pruned
    assert dict(pruned.coordinates)["access"] == "scoped_kubectl" and "spine_operator" in pruned.reason
    assert not task.warnings


def test_the_load_deletes_and_the_fault_manifests_on_deletes():
    for files in _bundles().values():
        plan = _json(files, "plan.json")
        assert plan["load"]["name"] == "standard_deletes"
        assert plan["load"]["mix"] == {**STANDARD_MIX, "delete": 5.0}
        (fault,) = plan["faults"]
        assert fault["manifest"]["text"] == "error_rate(delete) > 20%"


def test_the_gates_judge_deletes_and_protect_the_messages():
    for files in _bundles().values():
        gates = _json(files, "verifier/gates.json")["gates"]
        assert "error_rate(delete) <= 1%" in [p["text"] for p in gates["outcome"]]
        assert not any("baseline" in p["text"] and "delete" in p["text"] for p in gates["outcome"])
        safety = {check["kind"]: check for check in gates["safety"]}
        assert safety["changes_only"]["targets"] == [{"kind": "grant", "ref": "messages.DELETE"}]
        assert safety["protect"]["targets"] == [{"kind": "table", "ref": "messages"}]
        assert safety["invariant"]["sequence"] == "messages.seq"


def test_the_golden_fix_grants_delete_back_and_the_instruction_keeps_the_cause():
    for files in _bundles().values():
        solve = files["oracle/solve.sh"]
        assert "GRANT DELETE ON messages TO spine_app" in str(solve)
        instruction = str(files["instruction.md"]).lower().split("## what you can use")[0]  # the symptoms
        assert "delete one of their own messages" in instruction
        assert not any(word in instruction for word in ("grant", "privilege", "revoke", "spine_app", "permission"))


def test_the_standard_profile_and_its_baseline_are_unchanged():
    loads = load_library().substrates["spine"].loads
    assert loads["standard"].mix == STANDARD_MIX
    assert "delete" not in loads["light"].mix
    assert [(p.name, p.duration_s, p.rate) for p in loads["standard_deletes"].phases] == \
        [(p.name, p.duration_s, p.rate) for p in loads["standard"].phases]
    assert loads["standard_deletes"].warmup == loads["standard"].warmup
    baseline = json.loads((ROOT / "library/substrates/spine/baselines/standard.json").read_text())
    assert baseline["profile"]["name"] == "spine.standard" and baseline["profile"]["mix"] == STANDARD_MIX
    assert "delete" not in baseline["routes"]
