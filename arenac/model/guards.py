"""Guard conditions as data, and the one evaluation of them (the verifier's and the compiler's).

A guard that compares one target with a bound is `gates.Guard` (its serialisation predates these
forms and stays as it is). Any richer guard is `gates.GuardExpr`, whose condition is a tree of:

- `GuardCompare`: `left op right`, each side a sum of config keys (`KeyTerm`: a key times its
  factor) plus, on the right, a constant. Numbers are in the comparison's unit: the smallest own
  unit of its keys (a `_MS` key's milliseconds), so a key's factor is its sign times its unit over
  that one (`config(a.X_S)` among `_MS` keys: 1000). For keys that hold names, each side is one key
  or, on the right only, a name (`value`); `value` None means the right side is a key alone.
- `GuardAbsent`: holds when the snapshot has no value for the target.
- `GuardAll` / `GuardAny`: `and` / `or` of their parts.

`evaluate(condition, read)` is three-valued: `read(target)` gives the raw value, `MISSING` when the
snapshot lacks it, or `UNKNOWN` when the caller cannot know (the compiler's static end state knows
config only); a comparison over a missing key is false (only `absent(...)` makes absence pass);
`and`/`or` follow Kleene's logic, so an unknown part decides nothing that the others decide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, JsonValue

from arenac.core.units import parse_quantity
from arenac.model.actions import Target
from arenac.model.base import Model

Comparator = Literal["<=", ">=", "==", "!=", "<", ">"]


class KeyTerm(Model):
    target: Target
    factor: float = 1.0


class GuardCompare(Model):
    kind: Literal["compare"] = "compare"
    left: tuple[KeyTerm, ...]
    op: Comparator
    right: tuple[KeyTerm, ...] = ()
    value: float | str | None = 0.0  # the right side's constant minus the left's; a name; None: none


class GuardAbsent(Model):
    kind: Literal["absent"] = "absent"
    target: Target


class GuardAll(Model):
    kind: Literal["all"] = "all"
    parts: tuple[GuardCondition, ...]


class GuardAny(Model):
    kind: Literal["any"] = "any"
    parts: tuple[GuardCondition, ...]


GuardCondition = Annotated[GuardCompare | GuardAbsent | GuardAll | GuardAny, Field(discriminator="kind")]
GuardAll.model_rebuild()
GuardAny.model_rebuild()


class _Sentinel:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Sentinel("MISSING")  # the snapshot has no value for the target
UNKNOWN = _Sentinel("UNKNOWN")  # the caller cannot tell (a static check without the live value)
Reading = JsonValue | _Sentinel
Reader = Callable[[Target], Reading]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


def as_number(value: JsonValue) -> float | None:
    """A raw value as a number: a JSON number, or a string such as "16" or "350ms"; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
        try:
            return parse_quantity(value.strip()).value
        except ValueError:
            return None
    return None


def targets_of(condition: GuardCondition) -> tuple[Target, ...]:
    """Every target the condition reads, once each, in the order written."""
    if isinstance(condition, GuardCompare):
        found = [t.target for t in (*condition.left, *condition.right)]
    elif isinstance(condition, GuardAbsent):
        found = [condition.target]
    else:
        found = [t for part in condition.parts for t in targets_of(part)]
    return tuple(dict.fromkeys(found))


def evaluate(condition: GuardCondition, read: Reader) -> bool | None:
    """True, False, or None (unknown) for the condition over `read` (see the module docstring)."""
    if isinstance(condition, GuardAbsent):
        value = read(condition.target)
        return None if value is UNKNOWN else value is MISSING
    if isinstance(condition, GuardCompare):
        return _compare(condition, read)
    results = [evaluate(part, read) for part in condition.parts]
    decisive = isinstance(condition, GuardAny)  # `or` is decided by a true part, `and` by a false one
    if decisive in results:
        return decisive
    return None if None in results else not decisive


def _compare(condition: GuardCompare, read: Reader) -> bool | None:
    values = [read(term.target) for term in (*condition.left, *condition.right)]
    if any(v is UNKNOWN for v in values):
        return None
    if any(v is MISSING for v in values):
        return False
    constant = condition.value
    if constant is None or isinstance(constant, str):  # names: == and != only
        name = str(values[1]) if constant is None else constant
        return (str(values[0]) == name) == (condition.op == "==")
    numbers = [as_number(v) for v in values if not isinstance(v, _Sentinel)]
    if len(numbers) != len(values) or any(n is None for n in numbers):
        return False
    count = len(condition.left)
    left = sum(term.factor * (n or 0.0) for term, n in zip(condition.left, numbers[:count], strict=True))
    right = sum(term.factor * (n or 0.0) for term, n in zip(condition.right, numbers[count:], strict=True))
    return _OPS[condition.op](round(left, 9), round(right + constant, 9))
