"""The matrix (arenac.variants): alternatives expand into cells, cells the access surface cannot
serve are pruned with their reason, and a variant's id is a hash of what the variant is."""

from __future__ import annotations

import re

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import DECOY_DECL, built_variants, compile_text, spec


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


def test_a_sequencer_fault_is_re_fired_at_every_layer_by_its_burst():
    """At the config and image layers the chart's values cannot be set again, but the injection's
    workload trigger (the burst of concurrent sends) can: `survives retrigger(seq)` builds both
    cells and re-fires only the burst. A fault with no workload trigger at such a layer is pruned."""
    from pathlib import Path

    from arenac.model.actions import SendBurstAction

    text = Path("tasks/duplicate-sequence.arena").read_text(encoding="utf-8")
    assert "survives retrigger(seq)" in text
    variants = list(built_variants(compile_text(text).tasks[0]))
    assert sorted(v.coordinates["seq.layer"] for v in variants) == ["config", "image"]
    for variant in variants:
        (seq,) = variant.faults
        assert seq.retrigger and all(isinstance(a, SendBurstAction) for a in seq.retrigger)
        assert any(a.kind == "values" for a in seq.inject)  # what the retrigger leaves out
    pool = spec(access="shell").replace("layer = config | runtime", "layer = config").replace(
        "  gate safety {", "  gate safety {\n    survives retrigger(pool)")
    with pytest.raises(DiagnosticError, match="nothing to re-trigger"):
        compile_text(pool)
