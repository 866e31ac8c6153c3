"""One report for a mistake in a gate macro's own text, however often the macro is used.

Contract: `merge_macro_repeats` takes the diagnostics lowering found in a task's gates and the
macros the task could use; identical diagnostics whose span lies inside one macro's definition
(the mistake is in its text, not in what a use passed: an argument keeps the use's span) become
one, "(N uses of MACRO)". Every other diagnostic passes through unchanged, in order, but that one
said twice alike (a use's argument that the macro's text names twice) is said once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from arenac.core.diagnostics import Diagnostic, merge_repeats
from arenac.core.source import Span
from arenac.syntax import ast


def merge_macro_repeats(diagnostics: Iterable[Diagnostic], macros: Mapping[str, ast.MacroDef]) -> list[Diagnostic]:
    """The diagnostics outside every macro's text, then those inside one, each mistake there
    reported once with its number of uses (the caller's DiagnosticError orders them by place)."""
    outside: list[Diagnostic] = []
    inside: dict[str, list[Diagnostic]] = {}  # by macro: the diagnostics in its text, in order
    for diagnostic in diagnostics:
        macro = _innermost(diagnostic.span, macros)
        if macro is None:
            outside.append(diagnostic)
        else:
            inside.setdefault(macro, []).append(diagnostic)
    merged = list(dict.fromkeys(outside))  # one argument a body names twice is one mistake, said once
    for macro, found in inside.items():
        merged.extend(merge_repeats(found, _uses_of(macro)))
    return merged


def _uses_of(macro: str) -> Callable[[int], str]:
    return lambda count: f"{count} uses of {macro}"


def _innermost(span: Span | None, macros: Mapping[str, ast.MacroDef]) -> str | None:
    """The macro whose definition holds SPAN, the smallest when definitions nest (they do not
    today, but a definition's span is all that is compared)."""
    holding = [name for name, macro in macros.items() if span is not None and _holds(macro.span, span)]
    return min(holding, key=lambda name: _size(macros[name].span), default=None)


def _holds(outer: Span, inner: Span) -> bool:
    return (outer.file == inner.file and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def _size(span: Span) -> tuple[int, int]:
    return (span.end_line - span.line, span.end_column - span.column)
