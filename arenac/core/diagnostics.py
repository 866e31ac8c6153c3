"""Diagnostics: what a phase reports about a user's spec.

Every phase collects `Diagnostic`s and raises one `DiagnosticError` carrying all of
them; nothing here prints. `render_text` and `render_json` are the only formatters.
Error codes are stable and documented in docs/diagnostics.md:

  E01xx  syntax            E02xx  names and references      E03xx  units and types
  E04xx  access surfaces and variants                       E05xx  semantic checks
  E06xx  files and bundles
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from arenac.core.source import SourceFile, Span


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    hint: str | None = None
    severity: str = "error"
    note: str | None = None  # where the mistake took effect, when that is not at the span (library text)

    def sort_key(self) -> tuple[str, int, int, str]:
        span = self.span
        return (span.file, span.line, span.column, self.code) if span else ("", 0, 0, self.code)


class DiagnosticError(Exception):
    """Raised by a phase with every diagnostic it found, and the sources they may point into
    (by display name), so that a formatter can quote the line; a diagnostic whose file is not
    among them is shown without its line."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: Mapping[str, SourceFile] | None = None):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        self.sources: dict[str, SourceFile] = dict(sources or {})
        super().__init__("; ".join(d.message for d in self.diagnostics))


class Collector:
    """Accumulates diagnostics during one phase, then raises them together."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def error(self, code: str, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code, message, span, hint))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    def raise_if_any(self) -> None:
        if self.items:
            raise DiagnosticError(self.items)


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate, when one is close enough."""
    matches = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean '{matches[0]}'?" if matches else None


def merge_repeats(diagnostics: Iterable[Diagnostic], counted: Callable[[int], str],
                  shared: Callable[[Diagnostic], str] = lambda d: d.message) -> list[Diagnostic]:
    """Diagnostics that say the same thing at the same place merged into one, in order of first
    appearance. "The same" is the code, span, hint and note, and the message as `shared` reads it
    (e.g. without the variant it names). A group of N > 1 becomes its shared message followed by
    `(counted(N))` ("in 4 variants", "3 uses of M"); a diagnostic said once is kept as it was."""
    groups: dict[tuple[object, ...], list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.span, shared(diagnostic), diagnostic.hint, diagnostic.note,
               diagnostic.severity)
        groups.setdefault(key, []).append(diagnostic)
    merged = []
    for (_, _, message, *_), same in groups.items():
        if len(same) == 1:
            merged.append(same[0])
        else:
            merged.append(dataclasses.replace(same[0], message=f"{message} ({counted(len(same))})"))
    return merged


def render_text(diagnostic: Diagnostic, sources: dict[str, SourceFile]) -> str:
    span = diagnostic.span
    head = f"{diagnostic.severity}[{diagnostic.code}]: {diagnostic.message}"
    if span is None:
        lines = [head]
    else:
        lines = [f"{span.file}:{span.line}:{span.column}: {head}"]
        source = sources.get(span.file)
        text = source.line(span.line) if source else ""
        if text:
            gutter = str(span.line)
            pad = " " * len(gutter)
            width = span.end_column - span.column if span.end_line == span.line else len(text) - span.column + 1
            width = max(1, width)
            caret = "^" + "~" * (width - 1)
            lines.append(f"{pad} |")
            lines.append(f"{gutter} | {text}")
            lines.append(f"{pad} | {_caret_indent(text, span.column)}{caret}")
    if diagnostic.note:
        lines.append(f"   = note: {diagnostic.note}")
    if diagnostic.hint:
        lines.append(f"   = hint: {diagnostic.hint}")
    return "\n".join(lines)


def _caret_indent(text: str, column: int) -> str:
    """What goes before the caret: the source line's own tabs, every other character a space.

    A terminal expands a tab in the quoted line and in the caret line alike, so the caret
    stays under its column whatever the tab width (columns count a tab as one character).
    """
    before = text[: max(column - 1, 0)]
    past_end = max(column - 1 - len(text), 0)  # a span just after the line's last character
    return "".join("\t" if char == "\t" else " " for char in before) + " " * past_end


def to_json(diagnostic: Diagnostic) -> str:
    span = diagnostic.span
    record = {
        "code": diagnostic.code,
        "severity": diagnostic.severity,
        "message": diagnostic.message,
        "hint": diagnostic.hint,
        "note": diagnostic.note,
        "file": span.file if span else None,
        "line": span.line if span else None,
        "column": span.column if span else None,
        "end_line": span.end_line if span else None,
        "end_column": span.end_column if span else None,
    }
    return json.dumps(record, sort_keys=True)
