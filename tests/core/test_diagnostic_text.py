"""A diagnostic as text (arenac.core.diagnostics.render_text): the quoted line and its caret."""

from __future__ import annotations

from arenac.core.source import SourceFile


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
