"""The lark tree -> `arenac.syntax.ast` transformer: one small method per grammar rule."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from arenac.core.source import Span
from arenac.core.units import parse_quantity
from arenac.syntax import ast
from arenac.syntax.errors import SHORT_GATE_MESSAGE, single_error
from arenac.syntax.transform_guards import GuardRules
from arenac.syntax.unparse import call_text


def _token_span(file: str, token: Token) -> Span:
    line, column, end_line, end_column = token.line, token.column, token.end_line, token.end_column
    # the parser's tokens always carry their positions (lark types them optional for hand-made tokens)
    assert line is not None and column is not None and end_line is not None and end_column is not None
    return Span(file, line, column, end_line, end_column)


class ToAst(GuardRules, Transformer[Token, Any]):  # the rule a parse starts from decides what transform() returns
    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    # ---- helpers ----------------------------------------------------------------
    def _span(self, meta: Meta) -> Span:
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _name(self, token: Token) -> ast.Name:
        return ast.Name(str(token), _token_span(self.file, token))

    def _quantity(self, token: Token) -> ast.QuantityLit:
        return ast.QuantityLit(parse_quantity(str(token)), _token_span(self.file, token))

    # ---- values -----------------------------------------------------------------
    def string(self, children: list[Any]) -> ast.StringLit:
        (token,) = children
        return ast.StringLit(unescape(str(token)[1:-1]), _token_span(self.file, token))

    def long_string(self, children: list[Any]) -> ast.StringLit:
        (token,) = children
        return ast.StringLit(_dedent_long_string(str(token)[3:-3]), _token_span(self.file, token))

    def number(self, children: list[Any]) -> ast.NumberLit:
        (token,) = children
        return ast.NumberLit(float(token), _token_span(self.file, token))

    def quantity(self, children: list[Any]) -> ast.QuantityLit:
        (token,) = children
        return self._quantity(token)

    @v_args(meta=True)
    def dotted(self, meta: Meta, children: list[Any]) -> ast.Ref:
        return ast.Ref(tuple(str(t) for t in children), self._span(meta))

    def name_list(self, children: list[Any]) -> tuple[ast.Name, ...]:
        return tuple(self._name(t) for t in children)

    @v_args(meta=True)
    def arg_alternatives(self, meta: Meta, children: list[Any]) -> tuple[ast.Value, ...]:
        return tuple(children)

    @v_args(meta=True)
    def arg(self, meta: Meta, children: list[Any]) -> ast.Arg:
        name, alternatives = children
        if not isinstance(alternatives, tuple):
            alternatives = (alternatives,)
        return ast.Arg(self._name(name) if name is not None else None, alternatives, self._span(meta))

    @v_args(meta=True)
    def call(self, meta: Meta, children: list[Any]) -> ast.Call:
        func, *args = children
        return ast.Call(func, tuple(a for a in args if a is not None), self._span(meta))

    @v_args(meta=True)
    def binary(self, meta: Meta, children: list[Any]) -> ast.Binary:
        left, op, right = children
        return ast.Binary(str(op), left, right, self._span(meta))

    @v_args(meta=True)
    def comparison(self, meta: Meta, children: list[Any]) -> ast.Comparison:
        left, op, right = children
        return ast.Comparison(left, str(op), right, self._span(meta))

    @v_args(meta=True)
    def alternatives(self, meta: Meta, children: list[Any]) -> tuple[ast.Value, ...]:
        return tuple(children)

    # ---- top level ----------------------------------------------------------------
    def start(self, children: list[Any]) -> ast.Module:
        items = tuple(c for c in children if c is not None)
        return ast.Module(
            file=self.file,
            uses=tuple(i for i in items if isinstance(i, ast.Use)),
            tasks=tuple(i for i in items if isinstance(i, ast.TaskDecl)),
            access_defs=tuple(i for i in items if isinstance(i, ast.AccessDef)),
            loads=tuple(i for i in items if isinstance(i, ast.LoadDef)),
            macros=tuple(i for i in items if isinstance(i, ast.MacroDef)),
            items=items,
        )

    @v_args(meta=True)
    def use_stmt(self, meta: Meta, children: list[Any]) -> ast.Use:
        return ast.Use(children[0], self._span(meta))

    @v_args(meta=True)
    def task(self, meta: Meta, children: list[Any]) -> ast.TaskDecl:
        name, *statements = children
        return ast.TaskDecl(self._name(name), tuple(statements), self._span(meta))

    @v_args(meta=True)
    def setting(self, meta: Meta, children: list[Any]) -> ast.Setting:
        key, alternatives = children
        return ast.Setting(self._name(key), alternatives, self._span(meta))

    @v_args(meta=True)
    def access_choice(self, meta: Meta, children: list[Any]) -> ast.AccessChoice:
        return ast.AccessChoice(children[0], self._span(meta))

    # ---- faults -------------------------------------------------------------------
    @v_args(meta=True)
    def fault(self, meta: Meta, children: list[Any]) -> ast.FaultDecl:
        return self._fault_decl(meta, children, decoy=False)

    @v_args(meta=True)
    def decoy(self, meta: Meta, children: list[Any]) -> ast.FaultDecl:
        return self._fault_decl(meta, children, decoy=True)

    def _fault_decl(self, meta: Meta, children: list[Any], decoy: bool) -> ast.FaultDecl:
        name, call, body = children
        body = body or ()
        settings = tuple(s for s in body if isinstance(s, ast.Setting))
        onsets = [s for s in body if isinstance(s, ast.Onset)]
        recurs = [s for s in body if isinstance(s, ast.Recur)]
        for duplicate in onsets[1:] + recurs[1:]:
            raise single_error("E0104", "a fault has at most one onset and one recur", duplicate.span)
        return ast.FaultDecl(
            self._name(name), call, settings, onsets[0] if onsets else None, recurs[0] if recurs else None,
            self._span(meta), decoy,
        )

    def fault_body(self, children: list[Any]) -> tuple[ast.Setting | ast.Onset | ast.Recur, ...]:
        return tuple(children)

    @v_args(meta=True)
    def onset(self, meta: Meta, children: list[ast.Onset]) -> ast.Onset:
        return children[0]

    @v_args(meta=True)
    def onset_at_start(self, meta: Meta, children: list[Any]) -> ast.Onset:
        return ast.Onset("at_start", self._span(meta))

    @v_args(meta=True)
    def onset_after(self, meta: Meta, children: list[Any]) -> ast.Onset:
        return ast.Onset("after", self._span(meta), after=self._quantity(children[0]))

    @v_args(meta=True)
    def onset_in_window(self, meta: Meta, children: list[Any]) -> ast.Onset:
        (delay,) = children
        return ast.Onset("in_window", self._span(meta), after=self._quantity(delay) if delay is not None else None)

    @v_args(meta=True)
    def onset_every(self, meta: Meta, children: list[Any]) -> ast.Onset:
        every, offset, duration = (self._quantity(t) for t in children)
        return ast.Onset("every", self._span(meta), every=every, offset=offset, duration=duration)

    @v_args(meta=True)
    def onset_when(self, meta: Meta, children: list[Any]) -> ast.Onset:
        return ast.Onset("when", self._span(meta), when=children[0])

    @v_args(meta=True)
    def recur(self, meta: Meta, children: list[Any]) -> ast.Recur:
        (delay,) = children
        return ast.Recur(self._quantity(delay) if delay is not None else None, self._span(meta))

    # ---- the healthy stack ------------------------------------------------------------
    @v_args(meta=True)
    def healthy(self, meta: Meta, children: list[Any]) -> ast.HealthyDecl:
        return ast.HealthyDecl(tuple(children), self._span(meta))

    @v_args(meta=True)
    def healthy_stmt(self, meta: Meta, children: list[Any]) -> ast.HealthySetting:
        target, value = children
        return ast.HealthySetting(target, value, self._span(meta))

    # ---- access ---------------------------------------------------------------------
    @v_args(meta=True)
    def access_def(self, meta: Meta, children: list[Any]) -> ast.AccessDef:
        name, *rules = children
        return ast.AccessDef(self._name(name), tuple(rules), self._span(meta))

    @v_args(meta=True)
    def kube_rule(self, meta: Meta, children: list[Any]) -> ast.KubeRule:
        verbs, *resources = children
        return ast.KubeRule(verbs, tuple(resources), self._span(meta))

    @v_args(meta=True)
    def resource(self, meta: Meta, children: list[Any]) -> ast.ResourceRef:
        name, sub, group, names = children
        return ast.ResourceRef(self._name(name), sub, group, names or (), self._span(meta))

    def subresource(self, children: list[Any]) -> ast.Name:
        return self._name(children[0])

    def api_group(self, children: list[Any]) -> str:
        return ".".join(str(t) for t in children)

    @v_args(meta=True)
    def exec_rule(self, meta: Meta, children: list[Any]) -> ast.ExecRule:
        return ast.ExecRule(children[0], self._span(meta))

    @v_args(meta=True)
    def admin_rule(self, meta: Meta, children: list[Any]) -> ast.AdminRule:
        service, *paths = children
        return ast.AdminRule(self._name(service), tuple(self._name(p) for p in paths), self._span(meta))

    @v_args(meta=True)
    def db_rule(self, meta: Meta, children: list[Any]) -> ast.DbRule:
        return ast.DbRule(self._name(children[0]), self._span(meta))

    @v_args(meta=True)
    def source_rule(self, meta: Meta, children: list[Any]) -> ast.SourceRule:
        paths = tuple(
            ast.StringLit(unescape(str(t)[1:-1]), _token_span(self.file, t)) for t in children
        )
        return ast.SourceRule(paths, self._span(meta))

    @v_args(meta=True)
    def allow_rule(self, meta: Meta, children: list[Any]) -> ast.AllowRule:
        return ast.AllowRule(children[0], self._span(meta))

    # ---- load profiles -----------------------------------------------------------------
    @v_args(meta=True)
    def load_def(self, meta: Meta, children: list[Any]) -> ast.LoadDef:
        name, *stmts = children
        warmups = [s for s in stmts if isinstance(s, ast.PhaseDecl) and s.name.text == "warmup"]
        phases = tuple(s for s in stmts if isinstance(s, ast.PhaseDecl) and s.name.text != "warmup")
        mix = tuple(entry for s in stmts if isinstance(s, tuple) for entry in s)
        for duplicate in warmups[1:]:
            raise single_error("E0104", "a load profile has at most one warmup", duplicate.span)
        return ast.LoadDef(self._name(name), warmups[0] if warmups else None, phases, mix, self._span(meta))

    @v_args(meta=True)
    def warmup(self, meta: Meta, children: list[Any]) -> ast.PhaseDecl:
        duration, rate = children
        span = self._span(meta)
        return ast.PhaseDecl(ast.Name("warmup", span), self._quantity(duration), self._quantity(rate), span)

    @v_args(meta=True)
    def phase(self, meta: Meta, children: list[Any]) -> ast.PhaseDecl:
        name, duration, rate = children
        return ast.PhaseDecl(self._name(name), self._quantity(duration), self._quantity(rate), self._span(meta))

    def mix(self, children: list[Any]) -> tuple[ast.MixEntry, ...]:
        return tuple(children)

    @v_args(meta=True)
    def mix_entry(self, meta: Meta, children: list[Any]) -> ast.MixEntry:
        route, weight = children
        return ast.MixEntry(self._name(route), weight, self._span(meta))

    # ---- gates ---------------------------------------------------------------------------
    @v_args(meta=True)
    def gate(self, meta: Meta, children: list[Any]) -> ast.GateDecl:
        name, *stmts = children
        return ast.GateDecl(self._name(name), tuple(stmts), self._span(meta))

    @v_args(meta=True)
    def short_gate(self, meta: Meta, children: list[Any]) -> ast.GateDecl:
        """`gate NAME = MACRO(args)`: the block form with one `use MACRO(args)`, nothing else."""
        name, body = children
        if isinstance(body, _ShortMacro):
            return ast.GateDecl(self._name(name), (ast.MacroUse(body.call, body.call.span),), self._span(meta),
                                short=True)
        gate = str(name)
        if isinstance(body, ast.MacroUse):
            hint = f"leave out `use`: `gate {gate} = {call_text(body.call)}`"
        else:
            hint = f"anything else goes in a block: `gate {gate} {{`, one statement per line, then `}}`"
        raise single_error("E0118", SHORT_GATE_MESSAGE, body.span, hint)

    @v_args(meta=True)
    def short_macro(self, meta: Meta, children: list[Any]) -> _ShortMacro:
        return _ShortMacro(children[0])

    @v_args(meta=True)
    def macro_def(self, meta: Meta, children: list[Any]) -> ast.MacroDef:
        name, *rest = children
        params = tuple(self._name(t) for t in rest if isinstance(t, Token))
        stmts = tuple(s for s in rest if not isinstance(s, Token) and s is not None)
        return ast.MacroDef(self._name(name), params, stmts, self._span(meta))

    @v_args(meta=True)
    def predicate(self, meta: Meta, children: list[Any]) -> ast.Predicate:
        comparison, window = children
        kind, quantity = window if window else (None, None)
        return ast.Predicate(comparison, kind, quantity, self._span(meta))

    def within(self, children: list[Any]) -> tuple[str, ast.QuantityLit]:
        return ("within", self._quantity(children[0]))

    def for_(self, children: list[Any]) -> tuple[str, ast.QuantityLit]:
        return ("for", self._quantity(children[0]))

    @v_args(meta=True)
    def survives(self, meta: Meta, children: list[Any]) -> ast.Survives:
        return ast.Survives(children[0], self._span(meta))

    @v_args(meta=True)
    def never(self, meta: Meta, children: list[Any]) -> ast.Never:
        return ast.Never(children[0], self._span(meta))

    @v_args(meta=True)
    def fault_removed(self, meta: Meta, children: list[Any]) -> ast.FaultRemoved:
        return ast.FaultRemoved(children[0], self._span(meta))

    @v_args(meta=True)
    def changes_only(self, meta: Meta, children: list[Any]) -> ast.ChangesOnly:
        return ast.ChangesOnly(tuple(children), self._span(meta))

    @v_args(meta=True)
    def protect(self, meta: Meta, children: list[Any]) -> ast.Protect:
        *calls, at = children  # `[held_at]` is None when the line has no `at`
        return ast.Protect(tuple(calls), self._span(meta), at or ())

    @v_args(meta=True)
    def invariant(self, meta: Meta, children: list[Any]) -> ast.Invariant:
        call, *props = children
        return ast.Invariant(call, tuple(self._name(p) for p in props), self._span(meta))

    @v_args(meta=True)
    def macro_use(self, meta: Meta, children: list[Any]) -> ast.MacroUse:
        return ast.MacroUse(children[0], self._span(meta))

    # ---- oracle ----------------------------------------------------------------------------
    @v_args(meta=True)
    def oracle(self, meta: Meta, children: list[Any]) -> ast.OracleDecl:
        return ast.OracleDecl(tuple(children), self._span(meta))

    @v_args(meta=True)
    def repair(self, meta: Meta, children: list[Any]) -> ast.OracleStep:
        return ast.OracleStep("repair", self._span(meta), target=self._name(children[0]))

    @v_args(meta=True)
    def wait_until(self, meta: Meta, children: list[Any]) -> ast.OracleStep:
        condition, duration = children
        return ast.OracleStep("wait_until", self._span(meta), target=self._name(condition),
                              duration=self._quantity(duration))

    @v_args(meta=True)
    def wait_for(self, meta: Meta, children: list[Any]) -> ast.OracleStep:
        return ast.OracleStep("wait_for", self._span(meta), duration=self._quantity(children[0]))

    @v_args(meta=True)
    def declare(self, meta: Meta, children: list[Any]) -> ast.OracleStep:
        return ast.OracleStep("declare", self._span(meta))


@dataclass(frozen=True)
class _ShortMacro:
    """The macro call of a one-line gate, until `short_gate` wraps it."""

    call: ast.Call


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def unescape(body: str) -> str:
    """The escapes a spec string may use: \\n \\t \\" \\\\; any other backslash stays as written."""
    out, index = [], 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            following = body[index + 1]
            out.append(_ESCAPES.get(following, "\\" + following))
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _dedent_long_string(body: str) -> str:
    """Triple-quoted text: drop the first and last blank lines and the common indent."""
    lines = body.split("\n")
    if lines and not lines[0].strip():
        lines = lines[1:]
    if lines and not lines[-1].strip():
        lines = lines[:-1]
    return textwrap.dedent("\n".join(lines)).strip("\n") + ("\n" if lines else "")
