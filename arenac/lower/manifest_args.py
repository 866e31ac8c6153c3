"""A fault template's manifestation predicate, broken by the author's argument: reported at it.

Contract: `check_manifest_args(decl, template, args, ctx)` fills the template's manifestation
predicate with each combination of the declaration's argument alternatives, parses and lowers
it, and reports into `ctx.collector` every error whose place in the filled text is a value the
author wrote: at that value in the spec, with the template's text as a note and every known
name in the hint (the author sees their argument, not the library text). Each mistake is
reported once however many combinations or placeholders repeat it; it returns False when it
reported one. An error no author's value causes (in the template's own text, or in a default)
is left to the expansion, which reports it in the library's text; but a route the task's load
never requests (E0217) is the task's mistake wherever the route came from: a route derived from
the author's value (a parameter that `follows` another) is reported at that value, a default at
the fault's call.
"""

from __future__ import annotations

import dataclasses
import itertools
import string
from dataclasses import dataclass

from arenac.core.diagnostics import Collector, Diagnostic, DiagnosticError
from arenac.core.source import SourceFile, Span
from arenac.faults import placeholders
from arenac.lower.exprs import ExprContext, lower_predicate
from arenac.model.library import FaultTemplate
from arenac.syntax import ast
from arenac.syntax.parser import parse_comparison


@dataclass(frozen=True)
class _Filled:
    """The filled predicate and, for each substituted value, (first column, column after, parameter)."""

    text: str
    fields: tuple[tuple[int, int, str | None], ...]

    def cause(self, span: Span) -> str | None:
        """The parameter whose value lies under SPAN (a span on the predicate's one line)."""
        end = max(span.end_column, span.column + 1) if span.end_line == span.line else span.column + 1
        return next((param for first, after, param in self.fields if span.column < after and first < end), None)


def check_manifest_args(decl: ast.FaultDecl, template: FaultTemplate, args: dict[str, tuple],
                        ctx: ExprContext) -> bool:
    """Report, at the author's argument, what it breaks in the manifestation predicate (see the
    module doc); False when there was something to report."""
    written = _written(decl, template)
    if not written:
        return True
    found: dict[tuple, Diagnostic] = {}
    names = list(args)
    for choice in itertools.product(*(range(len(args[name])) for name in names)):
        chosen = dict(zip(names, choice, strict=True))
        filled = _fill(template, {name: args[name][i] for name, i in chosen.items()})
        for problem in _problems(filled, template, ctx):
            param = filled.cause(problem.span) if problem.span is not None else None
            note = _note(template)
            if param in written:
                at = written[param][chosen[param]]
            elif problem.code == "E0217" and param is not None:  # the task's load, not the library's text
                at, how = _source_of(decl, template, param, written, chosen)
                note = (f"'{param}' of fault template '{template.name}' {how} '{args[param][chosen[param]]}', and "
                        f"its manifestation predicate `{template.manifest}` measures that route")
            else:
                continue  # not the author's value: the expansion reports it in the template's text
            moved = dataclasses.replace(problem, span=at, note=note)
            found.setdefault((moved.code, moved.span, moved.message, moved.hint), moved)
    ctx.collector.extend(found.values())
    return not found


def _written(decl: ast.FaultDecl, template: FaultTemplate) -> dict[str, tuple[Span, ...]]:
    """The span of each alternative the author wrote, by parameter (named or by position)."""
    order = [p.name for p in template.params]
    written: dict[str, tuple[Span, ...]] = {}
    for position, arg in enumerate(decl.call.args):
        key = arg.name.text if arg.name else (order[position] if position < len(order) else None)
        if key is not None:
            written.setdefault(key, tuple(value.span for value in arg.alternatives))
    return written


def _source_of(decl: ast.FaultDecl, template: FaultTemplate, param: str, written: dict[str, tuple[Span, ...]],
               chosen: dict[str, int]) -> tuple[Span, str]:
    """Where a value the author did not write came from, and how it came: the written value of the
    parameter it follows, else the fault's call (a default, or what a default it follows gives)."""
    follows = next((p.follows for p in template.params if p.name == param), None)
    if follows is not None and follows in written:
        return written[follows][chosen.get(follows, 0)], "follows this argument to"
    return decl.call.span, f"follows the default of '{follows}' to" if follows else "is by default"


def _fill(template: FaultTemplate, args: dict) -> _Filled:
    """The predicate as `arenac.faults.instantiate` fills it, with where each value went."""
    values = placeholders(template, args)
    params = {p.name for p in template.params}
    formatter = string.Formatter()
    text, fields = "", []
    for literal, field, spec, conversion in formatter.parse(template.manifest):
        text += literal
        if field is None:
            continue
        value = formatter.format_field(formatter.convert_field(formatter.get_field(field, (), values)[0], conversion),
                                       spec or "")
        param = field if field in params else field.removesuffix("_s") if field.removesuffix("_s") in params else None
        fields.append((len(text) + 1, len(text) + 1 + len(value), param))
        text += value
    lead = len(text) - len(text.lstrip())  # parse_comparison strips the text: columns move with it
    return _Filled(text, tuple((first - lead, after - lead, param) for first, after, param in fields))


def _problems(filled: _Filled, template: FaultTemplate, ctx: ExprContext) -> list[Diagnostic]:
    """What parsing and lowering the filled predicate reports."""
    try:
        comparison = parse_comparison(SourceFile(f"<manifest of {template.name}>", filled.text))
    except DiagnosticError as error:
        return list(error.diagnostics)
    local = Collector()
    lower_predicate(comparison, dataclasses.replace(ctx, collector=local, bindings={}, list_known=True))
    return local.items


def _note(template: FaultTemplate) -> str:
    return f"the argument breaks `{template.manifest}`, the manifestation predicate of fault template '{template.name}'"
