"""Instantiate a fault template for one layer and one set of argument values.

Template strings hold `{param}` placeholders. Substituted spellings: whole numbers as
digits; durations as whole milliseconds (`{hold}`) or seconds (`{hold_s}`); sizes as
bytes; names as written. Substitution is over the parsed YAML structure, never over
raw text, so a value can never break the quoting of an action.
"""

from __future__ import annotations

import string

from pydantic import TypeAdapter

from arenac.model.actions import Action, Target
from arenac.model.library import FaultTemplate, LayerRecipe

_ACTIONS = TypeAdapter(tuple[Action, ...])
_TARGETS = TypeAdapter(tuple[Target, ...])


class Substitution(dict):
    """Placeholder values; a missing key is a library bug, reported by name."""

    def __missing__(self, key: str) -> str:
        raise KeyError(f"fault template uses unknown placeholder '{{{key}}}'")


def placeholders(template: FaultTemplate, args: dict[str, str | int | float]) -> Substitution:
    values = Substitution()
    types = {p.name: p.type for p in template.params}
    for name, value in args.items():
        kind = types.get(name)
        if kind == "duration":
            values[name] = str(round(float(value) * 1000))
            values[f"{name}_s"] = _number(float(value))
        elif kind in ("int", "size"):
            values[name] = str(int(value))
        else:
            values[name] = _number(value) if isinstance(value, float) else str(value)
    return values


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _fill(node, values: Substitution):
    if isinstance(node, str):
        return string.Formatter().vformat(node, (), values)
    if isinstance(node, dict):
        return {_fill(k, values): _fill(v, values) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_fill(v, values) for v in node]
    return node


def instantiate(template: FaultTemplate, layer: str, args: dict) -> tuple[LayerRecipe, str]:
    """The layer's recipe with placeholders filled, and the filled manifest predicate text."""
    values = placeholders(template, args)
    recipe = template.layers[layer]
    raw = recipe.model_dump(mode="json")
    filled = _fill(raw, values)
    return LayerRecipe.model_validate(filled), _fill(template.manifest, values)
