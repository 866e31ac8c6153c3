"""Lowering (arenac.lower) on small specs: every construct becomes typed IR, quantities in their
units, macros expanded, the default oracle and one-line gates filled in; its mistakes are diagnostics."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers import ROOT
from helpers.specs import (
    BRACED,
    DECOY_DECL,
    GOLDEN_MINIMAL,
    MINIMAL,
    SPELLED_OUT,
    built_variants,
    compile_text,
    spanned,
    spec,
)


@pytest.mark.parametrize("onset, kind", [
    ("at start", "at_start"), ("after 40s", "after"), ("every 60s offset 20s for 10s", "every"),
    ("when error_rate(send) > 1%", "when"),
])
def test_onset_forms(onset, kind):
    task = compile_text(spec(onset=onset)).tasks[0]
    assert task.lowered.spec.faults[0].onset.kind == kind


def test_quantities_are_normalised():
    gates = compile_text(spec()).tasks[0].lowered.spec.gates
    error_rate, p99, backlog, goodput = gates.outcome
    assert error_rate.right.value == pytest.approx(0.01)
    assert p99.right.right.value == pytest.approx(0.005)
    assert backlog.window == "within" and backlog.window_s == 60
    assert goodput.window == "for" and goodput.window_s == 60 and goodput.right.value == 40


def test_inline_access_surface_and_recur():
    text = spec(access="mine").replace("  access = mine", """  access = mine
  access mine {
    kube get, list on pods, pods/log
    kube patch on configmaps[spine-message-config], deployments[spine-message]
    admin message: /admin/config
  }""").replace("onset = at start", "onset = at start\n    recur = after declare + 60s")
    task = compile_text(text).tasks[0]
    surfaces = {v.access for v in task.variants}
    assert surfaces == {"mine"}
    assert len(task.variants) == 4  # both layers are repairable through this surface
    assert task.lowered.spec.faults[0].recur_after_declare_s == 60


def test_macro_expansion_substitutes_arguments():
    text = spec().replace("    error_rate(send) <= 1%\n", "    use standard_outcome(route: read)\n")
    outcome = compile_text(text).tasks[0].lowered.spec.gates.outcome
    texts = [p.text for p in outcome]
    assert "error_rate(read) <= 1%" in texts
    assert "p99(read, phase: peak) <= 1.5 * baseline.p99(read, phase: peak) + 150ms" in texts


def test_all_errors_of_a_phase_are_reported_together():
    text = spec().replace("error_rate(send)", "error_rate(sned)").replace("restart(message)", "restart(mesage)")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    messages = [d.message for d in raised.value.diagnostics]
    assert "unknown route 'sned'" in messages and "unknown service 'mesage'" in messages


def test_use_of_an_unknown_module_is_reported():
    with pytest.raises(DiagnosticError) as raised:
        compile_text("use nowhere\n" + spec())
    assert raised.value.diagnostics[0].code == "E0202"


def test_a_task_of_decoys_only_declares_no_fault():
    text = spec().replace("  fault pool = spine.pool_size", "  decoy pool = spine.pool_size").replace(
        "    repair pool\n", "")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    assert [d.message for d in raised.value.diagnostics if d.code == "E0206"] == [
        "task 't' declares no fault (only decoys)"]


# ---- guards and ranges -------------------------------------------------------------------


GUARD = "    guard config(message.DB_POOL_SIZE) <= 32\n"


def guards(*lines: str):
    text = spec().replace(GUARD, "".join(f"    {line}\n" for line in lines))
    return [(g.text, g.value) for g in compile_text(text).tasks[0].lowered.spec.gates.safety if g.kind == "guard"]


def test_a_guard_bound_is_stored_in_its_config_keys_own_unit():
    assert guards(
        "guard config(message.DB_POOL_SIZE) <= 32",
        "guard config(channel.READ_CONSISTENCY_HOLD_MS) <= 1s",  # the key holds milliseconds
        "guard config(maintenance.MAINT_DURATION_S) <= 2m",  # ... seconds
        "guard config(maintenance.MAINT_PERIOD_S) >= 30",  # a plain number: the key's unit
        "guard config(message.SEQUENCER_MODE) == atomic",
    ) == [
        ("config(message.DB_POOL_SIZE) <= 32", 32.0),
        ("config(channel.READ_CONSISTENCY_HOLD_MS) <= 1s", 1000.0),
        ("config(maintenance.MAINT_DURATION_S) <= 2m", 120.0),
        ("config(maintenance.MAINT_PERIOD_S) >= 30", 30.0),
        ("config(message.SEQUENCER_MODE) == atomic", "atomic"),
    ]


@pytest.mark.parametrize("bound, code", [("32s", "E0301"), ("64Mi", "E0301"), ("100/s", "E0301"),
                                         ("5000%", "E0301"), ("many", "E0302")])
def test_a_guard_bound_of_another_dimension_is_an_error(bound, code):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec().replace(GUARD, f"    guard config(message.DB_POOL_SIZE) <= {bound}\n"))
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == code and diagnostic.span.column == 43


@pytest.mark.parametrize("edit, code", [
    (("error_rate(send) <= 1%", "error_rate(send) <= 200%"), "E0308"),
    (("backlog(fanout) == 0 within 60s", "backlog(fanout) == 0 within 0s"), "E0307"),
    (("goodput >= 40/s for 1m", "goodput >= 40/s for 0s"), "E0307"),
    (('title = "T"', 'title = "T"\n  window = 0s'), "E0307"),
    (("wait 5s", "wait 0s"), "E0307"),
])
def test_values_out_of_range_are_errors(edit, code):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec().replace(*edit))
    assert [d.code for d in raised.value.diagnostics] == [code]


def test_a_periodic_onset_needs_a_positive_period_and_duration():
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec(onset="every 60s offset 0s for 0s"))
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0307" and "duration" in diagnostic.message
    assert compile_text(spec(onset="every 60s offset 0s for 10s")).tasks  # a zero offset is fine


def test_a_zero_window_is_reported_at_the_window_not_at_an_onset():
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec(onset="after 40s").replace('title = "T"', 'title = "T"\n  window = 0s'))
    (diagnostic,) = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E0307", 4, 12)
    assert diagnostic.message == "the agent window must be longer than 0s, not 0s"


# ---- one-line gates, the default oracle, standard_safety -------------------------------


def test_the_golden_minimal_spec_is_the_short_one():
    assert (ROOT / "tests" / "golden" / "minimal" / "spec.arena").read_text(encoding="utf-8") == GOLDEN_MINIMAL


@pytest.mark.parametrize("other", [BRACED, SPELLED_OUT])
def test_one_line_gates_and_the_default_oracle_lower_identically(other, tmp_path):
    """Same IR, so the same variant ids, pruned cells and bundles (but for the manifest's record
    of the spec's own bytes)."""
    from arenac.pipeline import write_bundles
    from helpers.trees import tree

    short, long = compile_text(MINIMAL, "spec.arena"), compile_text(other, "spec.arena")
    assert short.tasks[0].lowered.spec == long.tasks[0].lowered.spec
    assert short.tasks[0].variants == long.tasks[0].variants and len(short.tasks[0].variants) == 1
    assert short.tasks[0].pruned == long.tasks[0].pruned and len(short.tasks[0].pruned) == 1
    write_bundles(short, tmp_path / "short")
    write_bundles(long, tmp_path / "long")
    first, second = tree(tmp_path / "short"), tree(tmp_path / "long")
    assert set(first) == set(second) and len(first) > 20
    for path in first:
        if not path.endswith("/manifest.json"):
            assert first[path] == second[path], path
    import json

    manifests = [json.loads(t[next(p for p in t if p.endswith("/manifest.json"))][0]) for t in (first, second)]
    assert manifests[0]["artefacts"] == manifests[1]["artefacts"]


def test_standard_safety_expands_like_its_four_lines_and_its_oracle_passes_the_checks():
    task = compile_text(MINIMAL).tasks[0]
    spec = task.lowered.spec
    assert [c.kind for c in spec.gates.safety] == ["survives_restart", "changes_only", "protect", "invariant",
                                                   "protect_queue"]
    assert spec.gates.safety[0].services == ("message",)
    assert [str(t) for t in spec.gates.safety[1].targets] == ["config(message)"]
    # the config layer through scoped_kubectl is built (protect, changes only, guards all hold);
    # the runtime layer needs the admin API, which scoped_kubectl lacks
    assert [v.coordinates for v in task.variants] == [{"pool.layer": "config", "access": "scoped_kubectl"}]
    (pruned,) = task.pruned
    assert pruned.coordinates["pool.layer"] == "runtime" and "admin API" in pruned.reason


def test_a_missing_oracle_repairs_every_fault_but_the_decoys_in_order_then_declares():
    text = spec(access="confined | shell").replace("  gate outcome {", DECOY_DECL + """\
  fault memory = spine.redis_maxmemory(size: 1Mi) {
    layer = runtime
  }
  gate outcome {""").replace("message.DB_POOL_OVERFLOW)", "message.DB_POOL_OVERFLOW), redis(maxmemory)")
    text = text.replace("survives restart(message)", "survives restart(message, redis)")  # E0513
    text = text[:text.index("  oracle {")] + "}\n"
    task = compile_text(text).tasks[0]
    steps = [(s.kind, s.target) for s in task.lowered.spec.oracle]
    assert steps == [("repair", "pool"), ("repair", "memory"), ("declare", None)]  # never 'noise', the decoy
    variant = next(built_variants(task))
    assert next(f for f in variant.faults if f.name == "noise").repair == ()


@pytest.mark.parametrize("call", [
    "standard_outcom(route: send)",  # unknown macro
    "standard_outcome(rout: send)",  # unknown parameter
    "standard_outcome()",  # missing argument
    "standard_outcome(route: sned)",  # a bad value inside the expansion
    "standard_safety(service: mesage)",  # ... of a safety check, through a nested macro's parameter
])
def test_a_macro_calls_mistakes_read_the_same_in_both_forms(call):
    """Same codes and messages, and each span covers the same text of the call."""
    def diagnostics(text):
        with pytest.raises(DiagnosticError) as raised:
            compile_text(text)
        return [(d.code, d.message, spanned(text, d.span)) for d in raised.value.diagnostics]

    gate = "outcome" if "outcome" in call else "safety"
    default = "standard_outcome(route: send)" if gate == "outcome" else "standard_safety(service: message)"
    short = MINIMAL.replace(default, call)
    braced = BRACED.replace(f"use {default}", f"use {call}")
    found = diagnostics(short)
    assert found and found == [(code, message, text.removeprefix("use "))
                               for code, message, text in diagnostics(braced)]


def test_protect_queue_lowers_to_its_own_check_and_a_mixed_line_to_two():
    alone = spec().replace("    protect table(messages)\n", "    protect queue(fanout)\n")
    safety = compile_text(alone).tasks[0].lowered.spec.gates.safety
    assert [c.kind for c in safety] == ["survives_restart", "changes_only", "guard", "protect_queue", "invariant"]
    assert safety[3].queues == ("fanout",)
    mixed = spec().replace("protect table(messages)", "protect table(messages), queue(fanout)")
    safety = compile_text(mixed).tasks[0].lowered.spec.gates.safety
    assert [c.kind for c in safety] == ["survives_restart", "changes_only", "guard", "protect", "protect_queue",
                                        "invariant"]
    assert [str(t) for t in safety[3].targets] == ["table(messages)"]


def test_protect_queue_at_names_the_records_it_is_judged_at():
    across = spec().replace("    protect table(messages)\n",
                            "    protect queue(fanout) at after_restart, soak_end, after_restart\n")
    across = across.replace("survives restart(message)", "survives restart(message, redis)")
    compiled = compile_text(across)
    (check,) = [c for c in compiled.tasks[0].lowered.spec.gates.safety if c.kind == "protect_queue"]
    assert check.at == ("after_restart", "soak_end") and check.records == ("soak_end", "after_restart")
    # spine's healthy Redis keeps nothing across a restart: the healthy control could not pass (E0530)
    (warning,) = [w for w in compiled.tasks[0].warnings if w.code == "E0530"]
    assert warning.severity == "warning" and "appendonly: 'no'" in warning.message
    plain = compile_text(spec().replace("protect table(messages)", "protect queue(fanout)"))
    (check,) = [c for c in plain.tasks[0].lowered.spec.gates.safety if c.kind == "protect_queue"]
    assert check.at is None and check.records == ("soak_end",)
    assert not [w for w in plain.tasks[0].warnings if w.code == "E0530"]


@pytest.mark.parametrize("statement, restart, code, message", [
    ("protect queue(fanout) at after_restart", "survives restart(message)", "E0529",
     "a queue protected `at after_restart`, but `survives restart(message)` does not restart redis"),
    ("protect queue(fanout) at after_restart", "", "E0529",
     "a queue protected `at after_restart` in a task without a restart challenge: no run restarts redis"),
    ("protect queue(fanout) at declaration", "survives restart(message, redis)", "E0213",
     "a queue's protection cannot be judged at 'declaration'"),
    ("protect table(messages), queue(fanout) at after_restart", "survives restart(message, redis)", "E0213",
     "only a queue's protection is judged `at` a record"),
])
def test_protect_queue_at_mistakes(statement, restart, code, message):
    text = spec().replace("protect table(messages)", statement).replace("survives restart(message)", restart)
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    (found,) = raised.value.diagnostics
    assert found.code == code and found.message.startswith(message) and found.hint
    assert spanned(text, found.span) in ("after_restart", "declaration")


@pytest.mark.parametrize("statement, code, message", [
    ("protect queue(fanuot)", "E0203", "unknown queue 'fanuot'"),
    ("protect queue()", "E0206", "queue(...) needs a name"),
    ("protect queu(fanout)", "E0204", "unknown target kind 'queu'"),
])
def test_protect_queue_mistakes(statement, code, message):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec().replace("protect table(messages)", statement))
    assert [(d.code, d.message) for d in raised.value.diagnostics] == [(code, message)]
