"""A void run names what to move (arenac/runner/void_advice.py), the qualification report keeps
the reason and the advice, and the qualification table prints both (arenac/cli/qualify_table.py)."""

from __future__ import annotations

from arenac.cli.qualify_table import unscored_lines
from arenac.model.report import ControlReport, EpisodeCounts, QualificationReport, ReportedRun, VariantReport
from arenac.render.plan import build_plan
from arenac.runner.void_advice import void_advice
from helpers import ROOT
from helpers.specs import built_variants, compile_text

VOID = "fault 'maint' did not manifest within 120s of its onset"


def golden_plan():
    task = compile_text((ROOT / "tests" / "golden" / "minimal" / "spec.arena").read_text(encoding="utf-8")).tasks[0]
    variant = next(built_variants(task))
    return build_plan(variant, task.lowered.substrate)


def test_a_void_reason_naming_a_fault_says_its_symptom_and_the_call_to_move():
    advice = void_advice(golden_plan(), VOID)
    assert advice is not None
    assert "`p99(send, phase: peak) > 2 * baseline.p99(send, phase: peak)` never held within 120s" in advice
    assert "`fault maint = spine.maintenance_offset(...)`" in advice


def test_a_reason_that_names_no_fault_of_the_plan_gets_no_advice():
    plan = golden_plan()
    assert void_advice(plan, "fault 'other' did not manifest within 60s of its onset") is None
    assert void_advice(plan, "the load generator exited") is None


def run(status: str, reason: str | None = None, advice: str | None = None) -> ReportedRun:
    return ReportedRun(status=status, reward=0, outcome=False, safe_repair=False, wall_s=1.0, run_dir="r",
                       reason=reason, advice=advice)


def report(noop: tuple[ReportedRun, ...]) -> QualificationReport:
    controls = {"healthy": ControlReport(expected="pass", ok=True, runs=()),
                "noop": ControlReport(expected="fail", ok=False, runs=noop),
                "oracle": ControlReport(expected="pass", ok=True, runs=())}
    variant = VariantReport(task="minimal", variant="minimal-1", coordinates={}, controls=controls, ok=False)
    return QualificationReport(ok=False, k=2, time_scale=0.1, jobs=1, wall_s=1.0, episodes=EpisodeCounts(),
                               reused=0, variants=(variant,))


def test_the_table_lists_each_unscored_run_with_its_reason_and_a_void_ones_advice():
    lines = unscored_lines(report((run("scored"), run("void", VOID, "move it"), run("infra_error", "lost"))))
    assert lines == [f"void  minimal-1 noop#2: {VOID}", "  move: move it", "infra_error  minimal-1 noop#3: lost"]


def test_scored_runs_print_nothing_and_the_record_omits_reason_and_advice():
    assert unscored_lines(report((run("scored"),))) == []
    assert set(run("scored").model_dump(mode="json")) == {"status", "reward", "outcome", "safe_repair", "wall_s",
                                                           "run_dir"}
    assert run("void", VOID, "x").model_dump(mode="json")["advice"] == "x"
