"""Lower a guard richer than one target against a bound into a `GuardExpr`, its units checked.

Contract: `GuardExprLowering(ctx).lower(condition)` returns the `GuardExpr` of a guard's condition
(`and`/`or`, `absent(TARGET)`, comparisons whose sides are sums and differences of config keys
and literals), or None after reporting. Units follow the config keys' kinds (lower/config_keys.py):

- the terms of one sum have one kind (E0320: `config(a.X_MS) + config(a.N)`, `config(a.N) + 2s`);
- two sides that both hold keys have one kind (E0321: `config(a.X_MS) <= config(a.N)`); a side of
  literals only is a bound and keeps single guards' messages (E0301 another dimension, E0302 a
  name where a number belongs or the reverse);
- a key that holds a name, or a name, is never added (E0322), and compares only with == or !=;
- a term must be a config key the compiler can type (E0323: a product, or a `db_setting(...)`,
  `redis(...)` or `release(...)` target in a sum or compared with another key: the descriptor
  gives those no unit);
- an `and` of `absent(T)` and a comparison over T can never hold (E0324);
- a plain number among duration keys of different own units is ambiguous (E0325).
Numbers are stored in the comparison's unit, the smallest own unit of its keys (model/guards.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from arenac.core.units import Dimension
from arenac.lower.config_keys import KeyType
from arenac.lower.exprs import ExprContext, dimension_words
from arenac.lower.guard_keys import GUARD_KINDS, event_state_ok, observed_key_type, role_attribute_ok
from arenac.lower.targets import one_target
from arenac.model.actions import Target
from arenac.model.gates import GuardExpr
from arenac.model.guards import GuardAbsent, GuardAll, GuardAny, GuardCompare, GuardCondition, KeyTerm, targets_of
from arenac.syntax import ast
from arenac.syntax.unparse import value_text


@dataclass(frozen=True)
class _Term:
    """One signed term of a side: a key (`target`, with `key` None when the compiler cannot type
    it) or a literal (`literal`)."""

    sign: int
    node: ast.Expr
    target: Target | None = None  # for a key
    key: KeyType | None = None
    literal: ast.NumberLit | ast.QuantityLit | ast.Ref | None = None

    @property
    def text(self) -> str:
        return str(self.target) if self.target is not None else value_text(self.node)

    def is_name(self) -> bool:
        return isinstance(self.literal, ast.Ref) or (self.key is not None and self.key.is_name)

    def takes_a_name(self) -> bool:
        """A name, a key holding one, or a target the compiler cannot type (`release(message)`)."""
        return self.is_name() or (self.target is not None and self.key is None)


class GuardExprLowering:
    def __init__(self, ctx: ExprContext):
        self.ctx = ctx

    @property
    def errors(self):
        return self.ctx.collector

    def lower(self, condition: ast.GuardCondition) -> GuardExpr | None:
        lowered = self._condition(condition)
        if lowered is None:
            return None
        return GuardExpr(text=self._text(condition, top=True), condition=lowered)

    def _condition(self, node: ast.GuardCondition) -> GuardCondition | None:
        if isinstance(node, ast.Absent):
            call = self.ctx.bind(node.target)
            if not isinstance(call, ast.Call):
                self.errors.error("E0305", "absent(...) takes a target such as config(message.DB_POOL_SIZE)",
                                  node.target.span)
                return None
            target = one_target(call, self.ctx, kinds=GUARD_KINDS)
            if target is None or (target.kind == "config" and observed_key_type(target, call, self.ctx) is None):
                return None
            return GuardAbsent(target=target)
        if isinstance(node, ast.Comparison):
            return self._comparison(node)
        parts = [self._condition(part) for part in node.parts]  # every part, each reporting its errors
        if any(p is None for p in parts):
            return None
        found = tuple(p for p in parts if p is not None)
        if node.op == "and" and not self._satisfiable(node, found):
            return None
        return GuardAll(parts=found) if node.op == "and" else GuardAny(parts=found)

    def _satisfiable(self, node: ast.GuardBool, parts: tuple[GuardCondition, ...]) -> bool:
        """E0324: `absent(T) and <a comparison over T>` is false whether T is there or not."""
        absent = {p.target for p in parts if isinstance(p, GuardAbsent)}
        for index, part in enumerate(parts):
            if not isinstance(part, GuardCompare):
                continue
            for target in targets_of(part):
                if target in absent:
                    self.errors.error("E0324", f"absent({target}) and a comparison of {target} cannot both hold: "
                                      "a comparison over a missing key is false", node.parts[index].span,
                                      f"write `or absent({target})` to let the key be missing")
                    return False
        return True

    # ---- comparisons -----------------------------------------------------------------
    def _comparison(self, node: ast.Comparison) -> GuardCompare | None:
        left, right = self._side(node.left, +1), self._side(node.right, +1)
        if left is None or right is None:
            return None
        if not any(t.target is not None for t in (*left, *right)):
            self.errors.error("E0305", "a guard compares a target such as config(message.DB_POOL_SIZE) with a value",
                              node.span)
            return None
        if not self._terms_typed(left, right):
            return None
        events = [t for t in (*left, *right) if t.target is not None and t.target.kind == "event"]
        if events:
            others = [t for t in (*left, *right) if t is not events[0]]
            bound = others[0].literal if len(others) == 1 else None
            if not event_state_ok(node.op, bound, node, self.ctx):
                return None
        if any(t.is_name() for t in (*left, *right)):
            return self._names(node, left, right)
        return self._numbers(node, left, right)

    def _side(self, node: ast.Expr, sign: int) -> list[_Term] | None:
        """The signed terms of a sum, in order (`a - (b + c)`: +a, -b, -c)."""
        node = self.ctx.bind(node)
        if isinstance(node, ast.Binary):
            if node.op == "*":
                self.errors.error("E0323", "a guard adds and subtracts config keys and values; it does not multiply",
                                  node.span, "write the product's value as a bound")
                return None
            left = self._side(node.left, sign)
            right = self._side(node.right, sign if node.op == "+" else -sign)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.Call):
            target = one_target(node, self.ctx, kinds=GUARD_KINDS)
            if target is None or (target.kind == "role" and not role_attribute_ok(target, node, self.ctx)):
                return None
            key = observed_key_type(target, node, self.ctx) if target.kind == "config" else None
            if target.kind == "config" and key is None:
                return None
            return [_Term(sign, node, target=target, key=key)]
        if isinstance(node, (ast.NumberLit, ast.QuantityLit, ast.Ref)):
            return [_Term(sign, node, literal=node)]
        self.errors.error("E0305", "a guard's bound is a number, quantity or name", node.span)
        return None

    def _terms_typed(self, left: list[_Term], right: list[_Term]) -> bool:
        """E0323: an untyped target (db_setting, redis, release) only alone against literals."""
        keys = [t for t in (*left, *right) if t.target is not None]
        for side in (left, right):
            for term in side:
                if term.target is not None and term.key is None and (len(side) > 1 or len(keys) > 1):
                    self.errors.error("E0323", f"{term.text} has no unit the compiler knows, so a guard cannot add "
                                      "it or compare it with another key", term.node.span,
                                      f"compare it alone with a bound in base units, e.g. `{term.text} <= 10`")
                    return False
        return True

    def _names(self, node: ast.Comparison, left: list[_Term], right: list[_Term]) -> GuardCompare | None:
        for side, other in ((left, right), (right, left)):
            named = [t for t in side if t.is_name()]
            if len(side) > 1 and named:
                term = named[0]
                what = f"{term.text} holds a name" if term.target is not None else f"'{term.text}' is a name"
                self.errors.error("E0322", f"{what}: a guard cannot add it", term.node.span,
                                  "compare a name key alone, with == or != and a name")
                return None
            if len(side) > 1:  # a sum of numbers against a name
                self.errors.error("E0302", f"cannot compare {_side_text(side)}, a sum, with {_what(other[0])}",
                                  other[0].node.span, "a sum compares with a number, a quantity or another sum")
                return None
        (a,), (b,) = left, right
        if a.target is None:  # `atomic == config(m.MODE)`: the key is the left side
            a, b = b, a
        if not (a.takes_a_name() and b.takes_a_name()):
            first, second = (left[0], right[0])  # as written, for the message
            code = "E0321" if a.target is not None and b.target is not None else "E0302"
            self.errors.error(code, f"cannot compare {_what(first)} with {_what(second)}", second.node.span,
                              "a key that holds a name compares with a name or another such key, with == or !=")
            return None
        if node.op not in ("==", "!="):
            self.errors.error("E0302", f"{a.text} holds a name: it compares only with == or !=", node.span)
            return None
        right_terms = (KeyTerm(target=b.target),) if b.target is not None else ()
        value = None if b.target is not None else b.text
        return GuardCompare(left=(KeyTerm(target=a.target),), op=node.op, right=right_terms, value=value)

    def _numbers(self, node: ast.Comparison, left: list[_Term], right: list[_Term]) -> GuardCompare | None:
        keys = [t for t in (*left, *right) if t.key is not None]
        if not self._one_kind(left, right):
            return None
        units = sorted({t.key.unit for t in keys if t.key is not None})
        unit = units[0] if units else 1.0
        if len(units) > 1 and any(isinstance(t.literal, ast.NumberLit) for t in (*left, *right)):
            number = next(t for t in (*left, *right) if isinstance(t.literal, ast.NumberLit))
            self.errors.error("E0325", f"the plain number {number.text} is ambiguous beside keys in different "
                              "units", number.node.span, "write it as a duration, e.g. 500ms or 2s")
            return None
        constant = 0.0
        terms: tuple[list[KeyTerm], list[KeyTerm]] = ([], [])
        for index, side in enumerate((left, right)):
            for term in side:
                if term.literal is not None:
                    constant += (-1 if index == 0 else 1) * term.sign * _literal_value(term.literal, unit)
                else:
                    own = term.key.unit if term.key is not None else unit
                    terms[index].append(KeyTerm(target=term.target, factor=round(term.sign * own / unit, 9)))
        return GuardCompare(left=tuple(terms[0]), op=node.op, right=tuple(terms[1]), value=round(constant, 9))

    def _one_kind(self, left: list[_Term], right: list[_Term]) -> bool:
        """Every key and quantity has its side's kind, the kind of the side's first key (E0320), the
        two sides' keys have one kind (E0321), and a bound of literals has the keys' kind (E0301)."""
        kinds = [_side_kind(side) for side in (left, right)]
        for side, own, other in ((left, kinds[0], kinds[1]), (right, kinds[1], kinds[0])):
            keyed = own is not None
            for term in side:
                found = _dimension(term)
                wanted = own.key.dimension if own is not None and own.key is not None else (
                    other.key.dimension if other is not None and other.key is not None else found)
                if found is None or found == wanted:
                    continue
                anchor = own if keyed else other
                assert anchor is not None  # _comparison checked that some side holds a key
                words = dimension_words(wanted) if wanted else "a name"
                if not keyed:
                    self.errors.error("E0301", f"cannot compare {_side_text(other_side(left, right, side))}, "
                                      f"{words}, with {_what(term)}", term.node.span,
                                      f"write {words}, as {anchor.text} holds")
                else:
                    self.errors.error("E0320", f"cannot add {_what(term)} to {anchor.text} ({words})", term.node.span,
                                      "the terms of a guard's sum have one kind")
                return False
        a, b = kinds
        if a is not None and b is not None and _dimension(a) != _dimension(b):
            self.errors.error("E0321", f"cannot compare {_what(a)} with {_what(b)}", b.node.span,
                              "compare keys of one kind: durations with durations, numbers with numbers")
            return False
        return True

    # ---- text ----------------------------------------------------------------------------
    def _text(self, node: ast.GuardCondition, top: bool = False) -> str:
        if isinstance(node, ast.Absent):
            target = one_target(self.ctx.bind(node.target), self.ctx, kinds=GUARD_KINDS)  # it lowered: no error now
            return f"absent({target})"
        if isinstance(node, ast.Comparison):
            return f"{self._expr_text(node.left)} {node.op} {self._expr_text(node.right)}"
        text = f" {node.op} ".join(self._text(p) for p in node.parts)
        return text if top or node.op == "and" else f"({text})"

    def _expr_text(self, node: ast.Expr) -> str:
        return _side_text(self._side(node, +1) or [])


def _dimension(term: _Term) -> Dimension | None:
    """A term's dimension: a key's kind, a quantity's; None for a plain number (read in the keys'
    unit, so it fits any kind) and for an untyped target."""
    if term.key is not None:
        return term.key.dimension
    if isinstance(term.literal, ast.QuantityLit):
        return term.literal.quantity.dimension
    return None


def _side_kind(side: list[_Term]) -> _Term | None:
    """The first key of a side that the compiler can type: it sets the side's kind."""
    return next((t for t in side if t.key is not None), None)


def other_side(left: list[_Term], right: list[_Term], side: list[_Term]) -> list[_Term]:
    return right if side is left else left


def _side_text(side: list[_Term]) -> str:
    return "".join(t.text if i == 0 else f" {'+' if t.sign > 0 else '-'} {t.text}" for i, t in enumerate(side))


def _what(term: _Term) -> str:
    """A term as a message names it: `config(a.X_MS) (a duration)` or `a size ('64Mi')`."""
    if term.target is not None:
        if term.key is None:
            return f"{term.text} (of no unit the compiler knows)"
        return f"{term.text} ({'a name' if term.key.dimension is None else dimension_words(term.key.dimension)})"
    if isinstance(term.literal, ast.QuantityLit):
        return f"{dimension_words(term.literal.quantity.dimension)} ('{term.text}')"
    if isinstance(term.literal, ast.Ref):
        return f"a name ('{term.text}')"
    return f"a number ('{term.text}')"


def _literal_value(node: ast.NumberLit | ast.QuantityLit | ast.Ref, unit: float) -> float:
    """A literal in the comparison's unit: a plain number is in it already; a quantity is in base units."""
    if isinstance(node, ast.NumberLit):
        return node.value
    assert isinstance(node, ast.QuantityLit)  # names are compared by _names
    return node.quantity.value / unit
