"""The language end to end on small specs: every construct parses, lowers and expands."""

from __future__ import annotations

import re

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from helpers import ROOT
from helpers.specs import BRACED, DECOY_DECL, MINIMAL, SPELLED_OUT, built_variants, compile_text, spanned, spec


def test_alternatives_expand_into_the_matrix_and_prune_with_reasons():
    task = compile_text(spec()).tasks[0]
    built = {tuple(sorted(v.coordinates.items())) for v in task.variants}
    # size (2) x layer (2) x access (2) = 8 cells; config needs kubectl, runtime needs the admin API
    assert len(built) + len(task.pruned) == 8
    assert len(built) == 4
    for variant in task.variants:
        layer, access = variant.coordinates["pool.layer"], variant.coordinates["access"]
        assert (layer, access) in {("config", "scoped_kubectl"), ("runtime", "confined")}
    assert all("does not grant" in cell.reason for cell in task.pruned)


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


def ids_by_cell(text: str, name: str = "t.arena") -> dict[tuple, str]:
    return {tuple(sorted(v.coordinates.items())): v.id for v in compile_text(text, name).tasks[0].variants}


def test_variant_ids_are_content_hashes_stable_under_unrelated_edits():
    before = ids_by_cell(spec())
    assert all(re.fullmatch(r"t-[0-9a-f]{8}", vid) for vid in before.values())
    # comments, layout, the file's name and the order of alternatives change no variant
    unrelated = ("# a comment\n" + spec()).replace("    layer = config | runtime", "    layer = runtime | config")
    assert ids_by_cell(unrelated, "elsewhere/renamed.arena") == before
    # a new alternative adds cells and leaves the existing ones alone
    widened = ids_by_cell(spec().replace("size: 2 | 4", "size: 2 | 4 | 8"))
    assert {cell: widened[cell] for cell in before} == before and len(widened) == 6


@pytest.mark.parametrize("edit", [
    ("size: 2 | 4", "size: 2 | 5"),  # a fault argument
    ('title = "T"', 'title = "A different title"'),  # what the agent is told
    ("error_rate(send) <= 1%", "error_rate(send) <= 2%"),  # a gate
    ("wait 5s", "wait 9s"),  # the oracle
])
def test_a_change_to_what_a_variant_is_gives_it_a_new_id(edit):
    before = ids_by_cell(spec())
    after = ids_by_cell(spec().replace(*edit))
    assert edit[0] in spec()
    changed = {cell for cell in before if cell in after and after[cell] != before[cell]}
    if edit[0].startswith("size"):  # only the cells with size 4 changed (to 5)
        assert not changed and set(after) != set(before)
        kept = {cell for cell in before if ("pool.size", "2") in cell}
        assert kept and all(after[cell] == before[cell] for cell in kept)
        assert not set(after.values()) & {before[cell] for cell in before if cell not in kept}
    else:
        assert changed == set(before)


def test_inline_access_surface_and_recur():
    text = spec(access="mine").replace("  access = mine", """  access = mine
  access mine {
    kube get, list on pods, pods/log
    kube patch on configmaps[spine-message-config], deployments[spine-message]
    admin message: /admin/config
  }""").replace("onset = at start", "onset = at start\n    recur = after declare + 30s")
    task = compile_text(text).tasks[0]
    surfaces = {v.access for v in task.variants}
    assert surfaces == {"mine"}
    assert len(task.variants) == 4  # both layers are repairable through this surface
    assert task.lowered.spec.faults[0].recur_after_declare_s == 30


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



def test_a_decoy_is_injected_but_never_repaired_or_awaited():
    from arenac.lower.library import load_library
    from arenac.render.plan import build_plan

    text = spec(access="confined").replace("  gate outcome {", DECOY_DECL + "  gate outcome {")
    variant = next(built_variants(compile_text(text).tasks[0]))
    noise = next(f for f in variant.faults if f.name == "noise")
    assert noise.decoy and noise.repair == () and noise.inject
    assert variant.coordinates["noise.layer"] == "runtime"
    plan = build_plan(variant, load_library().substrates["spine"].descriptor)
    assert [(f.name, f.decoy) for f in plan.faults] == [("pool", False), ("noise", True)]


def test_a_task_of_decoys_only_declares_no_fault():
    text = spec().replace("  fault pool = spine.pool_size", "  decoy pool = spine.pool_size").replace(
        "    repair pool\n", "")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    assert [d.message for d in raised.value.diagnostics if d.code == "E0206"] == [
        "task 't' declares no fault (only decoys)"]


# ---- guards, ranges and rendering ------------------------------------------------------

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


@pytest.mark.parametrize("value, dimension, text", [
    (1024, "size", "1Ki"), (1024**3, "size", "1Gi"), (1536, "size", "1.5Ki"), (0.001, "duration", "1ms"),
    (600, "duration", "10m"), (5400, "duration", "90m"), (1.5, "duration", "1500ms"), (0, "duration", "0s"),
    (0.05, "fraction", "5%"), (40, "rate", "40/s"), (1e9, "number", "1000000000"), (0.5, "number", "0.5"),
])
def test_quantities_are_formatted_as_an_author_writes_them(value, dimension, text):
    from arenac.core.units import Dimension, format_quantity

    assert format_quantity(value, Dimension(dimension)) == text


def test_the_caret_line_repeats_the_source_lines_tabs():
    from arenac.core.diagnostics import Diagnostic, render_text
    from arenac.core.source import Span

    source = SourceFile("t.arena", "task t {\n\t\terror_rate(sned) <= 1%\n}\n")
    text = render_text(Diagnostic("E0203", "unknown route 'sned'", Span.point("t.arena", 2, 14, 4)),
                       {"t.arena": source})
    quoted, caret = text.splitlines()[2:4]
    assert quoted == "2 | \t\terror_rate(sned) <= 1%"
    assert caret == "  | \t\t           ^~~~"
    assert quoted.expandtabs(8).index("sned") == caret.expandtabs(8).index("^")


# ---- one-line gates, the default oracle, standard_safety -------------------------------

def test_the_golden_minimal_spec_is_the_short_one():
    assert (ROOT / "tests" / "golden" / "minimal" / "spec.arena").read_text(encoding="utf-8") == MINIMAL


def test_a_one_line_gate_parses_as_the_block_with_one_use():
    from arenac.syntax import ast
    from arenac.syntax.parser import parse

    (task,) = parse(SourceFile("t.arena", MINIMAL)).tasks
    outcome, safety = (s for s in task.statements if isinstance(s, ast.GateDecl))
    assert outcome.short and safety.short
    (use,) = outcome.statements
    assert isinstance(use, ast.MacroUse) and use.call.func.text == "standard_outcome"
    assert (use.span.line, use.span.column, use.span.end_column) == (7, 18, 47)  # the call itself
    (braced,) = parse(SourceFile("t.arena", BRACED)).tasks
    assert not any(s.short for s in braced.statements if isinstance(s, ast.GateDecl))


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


def test_the_default_oracle_is_judged_like_a_written_one():
    """E0507 (protect), E0509 (changes only) and E0508 (guards in the end state) apply to the
    default oracle, reported at the fault it repairs."""
    text = MINIMAL.replace("  gate safety = standard_safety(service: message)\n", """  gate safety {
    changes only config(fanout)
    protect config(message.DB_POOL_SIZE)
    guard config(message.DB_POOL_SIZE) <= 4
  }
""")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    found = {(d.code, d.span.line, d.span.column) for d in raised.value.diagnostics}
    assert found == {("E0507", 5, 9), ("E0509", 5, 9), ("E0508", 11, 5)}
    assert all("the default oracle" in d.message for d in raised.value.diagnostics)


@pytest.mark.parametrize("statement", [
    "error_rate(send) <= 1%",
    "goodput >= 0.95 * baseline.goodput within 60s",
    "use standard_outcome(route: send)",
    "survives restart(message)",
    "changes only config(message)",
    "guard config(message.DB_POOL_SIZE) <= 32",
    "protect table(messages)",
    "invariant sequence(messages.seq) dense unique",
    "goodput",
    "5",
    "standard_outcome(route: send) extra",
    "",
])
def test_a_one_line_gate_that_is_not_a_macro_call_is_a_syntax_diagnostic(statement):
    text = MINIMAL.replace("standard_outcome(route: send)", statement)
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0118" and diagnostic.span.line == 7
    assert "gate NAME = MACRO(args)" in diagnostic.message
    if statement in ("error_rate(send) <= 1%", "survives restart(message)"):
        assert spanned(text, diagnostic.span) == statement  # the whole statement, as in a block


def test_a_mistake_inside_the_call_keeps_the_call_messages():
    text = MINIMAL.replace("standard_outcome(route: send)", "standard_outcome(route: send x: 1)")
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    assert [d.code for d in raised.value.diagnostics] == ["E0116"]


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


@pytest.mark.parametrize("statement, code, message", [
    ("protect queue(fanuot)", "E0203", "unknown queue 'fanuot'"),
    ("protect queue()", "E0206", "queue(...) needs a name"),
    ("protect queu(fanout)", "E0204", "unknown target kind 'queu'"),
])
def test_protect_queue_mistakes(statement, code, message):
    with pytest.raises(DiagnosticError) as raised:
        compile_text(spec().replace("protect table(messages)", statement))
    assert [(d.code, d.message) for d in raised.value.diagnostics] == [(code, message)]
