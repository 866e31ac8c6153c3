"""Parse .arena text into a `Module`, or raise a `DiagnosticError`.

The grammar is package data (`arenac.grammar/arena.lark`), compiled once per process
(`arenac.syntax.grammar`).
Syntax errors are turned into diagnostics with line, column and a friendly message;
after an error the offending line is blanked and parsing resumes, so that one run
reports every independent syntax error of a file (up to a limit).
"""

from __future__ import annotations

from lark.exceptions import UnexpectedInput, VisitError

from arenac.core.diagnostics import Collector, DiagnosticError
from arenac.core.source import SourceFile, Span
from arenac.syntax import ast
from arenac.syntax.errors import describe_unexpected, single_error, span_of
from arenac.syntax.grammar import lark_parser, parse_file_tree
from arenac.syntax.transform import ToAst

_MAX_SYNTAX_ERRORS = 20


def parse(source: SourceFile) -> ast.Module:
    """Parse one file; every syntax error found is raised together."""
    text = source.text if source.text.endswith("\n") else source.text + "\n"
    collector = Collector()
    seen_lines: set[int] = set()
    for _ in range(_MAX_SYNTAX_ERRORS):
        try:
            tree = parse_file_tree(text)
        except UnexpectedInput as error:
            diagnostic = describe_unexpected(error, source, text)
            line = diagnostic.span.line if diagnostic.span else 0
            if line in seen_lines:
                break
            seen_lines.add(line)
            collector.items.append(diagnostic)
            if _at_end(error):  # blanking a line cannot close a block: any later error is an echo
                break
            blanked = _blank_line(text, line)
            if blanked is None:
                break
            text = blanked
            continue
        if collector.items:
            break
        try:
            module: ast.Module = ToAst(source.name).transform(tree)  # parsed from the rule `start`
            return module
        except VisitError as error:
            if isinstance(error.orig_exc, DiagnosticError):
                raise error.orig_exc from None
            # A construct the transformer could not read is still the author's text: report it
            # where it stands instead of showing a traceback (the fuzz tests hunt these down).
            meta = getattr(error.obj, "meta", None)
            span = span_of(source.name, meta) if meta is not None and not meta.empty else None
            raise single_error("E0100", f"cannot read this {error.rule} ({error.orig_exc})", span) from None
    raise DiagnosticError(collector.items)


def _at_end(error: UnexpectedInput) -> bool:
    token = getattr(error, "token", None)
    return getattr(token, "type", None) == "$END"


def _blank_line(text: str, line: int) -> str | None:
    """Replace one line with spaces (keeping positions), unless it opens or closes a
    block: removing a brace would only produce cascading errors."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    target = lines[line - 1]
    if "{" in target or "}" in target or '"""' in target:
        return None
    lines[line - 1] = " " * len(target)
    return "\n".join(lines)


def parse_comparison(source: SourceFile) -> ast.Comparison:
    """Parse a single comparison (a template's manifestation predicate)."""
    try:
        tree = lark_parser().parse(source.text.strip(), start="comparison")
    except UnexpectedInput as error:
        line, column = getattr(error, "line", 1) or 1, getattr(error, "column", 1) or 1
        raise single_error("E0101", "invalid predicate",
                           Span.point(source.name, max(line, 1), max(column, 1))) from error
    comparison: ast.Comparison = ToAst(source.name).transform(tree)  # parsed from the rule `comparison`
    return comparison
