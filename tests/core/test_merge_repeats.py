"""merge_repeats (arenac.core.diagnostics): one diagnostic for a mistake said alike N times, with
its count; different mistakes, or one said once, unchanged. A note is shown and exported."""

from __future__ import annotations

import json

from arenac.core.diagnostics import Diagnostic, merge_repeats, render_text, to_json
from arenac.core.source import SourceFile, Span

AT = Span.point("t.arena", 2, 3, 4)


def _variants(n: int) -> str:
    return f"in {n} variants"


def test_identical_diagnostics_become_one_with_their_count():
    same = [Diagnostic("E0508", "guard fails", AT, "raise it")] * 3
    assert merge_repeats(same, _variants) == [Diagnostic("E0508", "guard fails (in 3 variants)", AT, "raise it")]


def test_diagnostics_that_differ_in_code_place_hint_or_message_are_kept_apart():
    kinds = [Diagnostic("E0508", "guard fails", AT), Diagnostic("E0509", "guard fails", AT),
             Diagnostic("E0508", "guard fails", Span.point("t.arena", 3, 3)),
             Diagnostic("E0508", "guard fails", AT, "a hint"), Diagnostic("E0508", "guard holds", AT)]
    assert merge_repeats(kinds, _variants) == kinds


def test_the_shared_reading_merges_messages_that_differ_only_in_what_they_are_an_instance_of():
    found = [Diagnostic("E0508", "guard fails (variant a=1)", AT), Diagnostic("E0508", "guard fails (variant a=2)", AT),
             Diagnostic("E0508", "other (variant a=1)", AT)]
    merged = merge_repeats(found, _variants, lambda d: d.message.rsplit(" (variant", 1)[0])
    assert [d.message for d in merged] == ["guard fails (in 2 variants)", "other (variant a=1)"]


def test_a_note_is_rendered_before_the_hint_and_exported():
    diagnostic = Diagnostic("E0203", "unknown route 'x'", AT, "the routes are send", note="in the template")
    text = render_text(diagnostic, {"t.arena": SourceFile("t.arena", "a\n  xxxx\n")})
    assert text.splitlines()[-2:] == ["   = note: in the template", "   = hint: the routes are send"]
    assert json.loads(to_json(diagnostic))["note"] == "in the template"
    assert "note" not in render_text(Diagnostic("E0203", "m", AT), {})
