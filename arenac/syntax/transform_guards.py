"""The guard rules of the lark tree -> `arenac.syntax.ast` transformer (transform.py's `ToAst`
mixes them in): a guard statement, where it is held (`at ...`), and its condition's `and`, `or` and
`absent(...)`. Kept apart so that each module stays small; `_span` and `_name` are ToAst's."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from arenac.core.source import Span
from arenac.syntax import ast


class GuardRules:
    def _span(self, meta: Meta) -> Span:
        raise NotImplementedError  # ToAst's

    def _name(self, token: Token) -> ast.Name:
        raise NotImplementedError  # ToAst's

    @v_args(meta=True)
    def guard(self, meta: Meta, children: list[Any]) -> ast.Guard:
        condition, at = children
        return ast.Guard(condition, self._span(meta), at or ())

    def held_at(self, children: list[Token]) -> tuple[ast.Name, ...]:
        """`at a, b` after a guard or a protect line: the names, checked where they are lowered."""
        return tuple(self._name(token) for token in children)

    @v_args(meta=True)
    def guard_or(self, meta: Meta, children: list[Any]) -> ast.GuardBool:
        return self._guard_bool("or", meta, children)

    @v_args(meta=True)
    def guard_and(self, meta: Meta, children: list[Any]) -> ast.GuardBool:
        return self._guard_bool("and", meta, children)

    def _guard_bool(self, op: str, meta: Meta, children: list[Any]) -> ast.GuardBool:
        """`a or b or c` as one node of three parts: the grammar's left recursion nests them."""
        parts: list[ast.GuardCondition] = []
        for child in children:
            same = isinstance(child, ast.GuardBool) and child.op == op
            parts.extend(child.parts if same else (child,))
        return ast.GuardBool(op, tuple(parts), self._span(meta))

    @v_args(meta=True)
    def guard_absent(self, meta: Meta, children: list[Any]) -> ast.Absent:
        return ast.Absent(children[0], self._span(meta))
