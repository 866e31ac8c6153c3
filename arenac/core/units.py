"""Quantities with units, as written in specs (`350ms`, `40s`, `2m`, `1%`, `64Mi`, `40/s`).

Every quantity is normalised to a base unit of its dimension: seconds, a fraction
(1% -> 0.01), bytes, or requests per second. Plain numbers have the dimension
`number`. The checker compares dimensions, never unit spellings.

`UNITS` is the one list of unit spellings: the pattern here (`UNIT_ALTERNATION`), the grammar's
QUANTITY terminal (arenac/syntax/grammar.py writes it in when it loads arena.lark) and what a
message says of a unit that does not exist (`unknown_unit_hint`) derive from it.
"""

from __future__ import annotations

import re
from enum import Enum

from pydantic import BaseModel, ConfigDict


class Dimension(str, Enum):  # noqa: UP042 - a StrEnum's str() and format() differ
    number = "number"
    duration = "duration"
    fraction = "fraction"
    size = "size"
    rate = "rate"


UNITS: dict[str, tuple[Dimension, float]] = {
    "ms": (Dimension.duration, 0.001),
    "s": (Dimension.duration, 1.0),
    "m": (Dimension.duration, 60.0),
    "h": (Dimension.duration, 3600.0),
    "%": (Dimension.fraction, 0.01),
    "Ki": (Dimension.size, 1024.0),
    "Mi": (Dimension.size, 1024.0**2),
    "Gi": (Dimension.size, 1024.0**3),
    "/s": (Dimension.rate, 1.0),
}

# longest spellings first (stable), as a regex alternation: `ms|Ki|Mi|Gi|/s|s|m|h|%`
UNIT_ALTERNATION = "|".join(re.escape(unit) for unit in sorted(UNITS, key=len, reverse=True))
_QUANTITY = re.compile(rf"^(\d+(?:\.\d+)?)({UNIT_ALTERNATION})?$")


class Quantity(BaseModel):
    """A normalised quantity; `text` keeps the author's spelling for messages."""

    model_config = ConfigDict(frozen=True)

    value: float
    dimension: Dimension
    text: str

    def __str__(self) -> str:
        return self.text


def parse_quantity(text: str) -> Quantity:
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    number, unit = match.groups()
    if unit is None:
        return Quantity(value=float(number), dimension=Dimension.number, text=text)
    dimension, factor = UNITS[unit]
    return Quantity(value=round(float(number) * factor, 9), dimension=dimension, text=text)


def format_seconds(seconds: float) -> str:
    """Canonical spelling of a duration, used in generated artefacts."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


# Units an author writes a value of each dimension in, largest first; `format_quantity` picks
# the largest that gives a whole number, else the largest that gives at least 1.
_HUMAN_UNITS: dict[Dimension, tuple[tuple[str, float], ...]] = {
    Dimension.duration: (("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 0.001)),
    Dimension.size: (("Gi", 1024.0**3), ("Mi", 1024.0**2), ("Ki", 1024.0)),  # specs have no bytes unit
    Dimension.fraction: (("%", 0.01),),
    Dimension.rate: (("/s", 1.0),),
    Dimension.number: (("", 1.0),),
}


def format_quantity(value: float, dimension: Dimension) -> str:
    """A base-unit value spelled as an author would write it: `1Ki`, `10m`, `350ms`, `5%`, `200`.

    For messages only (artefacts use `format_seconds`). Never scientific notation; zero is
    spelled in the dimension's everyday unit (`0s`, `0%`, `0`).
    """
    units = _HUMAN_UNITS[dimension]
    if value == 0:
        unit = "s" if dimension == Dimension.duration else units[-1][0]
        return f"0{unit}"
    scaled = [(round(value / factor, 9), unit) for unit, factor in units]
    for number, unit in scaled:
        if abs(number) >= 1 and float(number).is_integer():
            return f"{_plain_number(number)}{unit}"
    number, unit = next(((n, u) for n, u in scaled if abs(n) >= 1), scaled[-1])
    return f"{_plain_number(number)}{unit}"


def _plain_number(number: float) -> str:
    """`200`, `0.5`, `1073741824`: no exponent, no trailing zeros."""
    if float(number).is_integer():
        return str(int(number))
    return f"{number:.9f}".rstrip("0").rstrip(".")


# How a message names the values of a dimension ("sizes are Ki, Mi, Gi").
_DIMENSION_NOUNS = {Dimension.duration: "durations", Dimension.fraction: "percentages",
                    Dimension.size: "sizes", Dimension.rate: "rates"}
# Units other tools write, by the dimension they mean here (lower case; `512mb`, `10sec`, `5pct`).
# Byte units are every spelling whose letters, less a trailing `b` or `ib`, are a decimal prefix.
_BYTE_PREFIXES = ("", "k", "m", "g", "t")
_LOOKALIKES: dict[str, Dimension] = {
    **dict.fromkeys(("byte", "bytes"), Dimension.size),
    **dict.fromkeys(("us", "ns", "msec", "msecs", "sec", "secs", "second", "seconds", "min", "mins", "minute",
                     "minutes", "hr", "hrs", "hour", "hours", "d", "day", "days"), Dimension.duration),
    **dict.fromkeys(("pct", "percent"), Dimension.fraction),
    **dict.fromkeys(("rps", "qps", "hz"), Dimension.rate),
}


def units_of(dimension: Dimension) -> list[str]:
    """The spellings `UNITS` has for a dimension, in its order (`ms, s, m, h`)."""
    return [unit for unit, (dim, _) in UNITS.items() if dim == dimension]


def unknown_unit_hint(number: str, unit: str) -> str:
    """What to tell an author who wrote NUMBER in a UNIT the language does not have: the units of
    the dimension it seems to mean, with the likeliest spelled out (`sizes are Ki, Mi, Gi, e.g.
    512Mi`), or every unit by dimension when it is not clear which is meant."""
    dimension = _likely_dimension(unit)
    if dimension is None:
        return "units are " + "; ".join(f"{', '.join(units_of(d))} ({noun})" for d, noun in _DIMENSION_NOUNS.items())
    units = units_of(dimension)
    words = f"{_DIMENSION_NOUNS[dimension]} are {', '.join(units)}"
    lower = unit.lower()
    # the longest unit that starts the spelling (`msec`: ms), else one with its first letter (`mb`: Mi)
    likely = (max((u for u in units if lower.startswith(u.lower())), key=len, default=None)
              or next((u for u in units if u[0].lower() == lower[0]), None))
    return f"{words}, e.g. {number}{likely}" if likely else words


def _likely_dimension(unit: str) -> Dimension | None:
    lower = unit.lower()
    if lower.removesuffix("ib").removesuffix("b") in _BYTE_PREFIXES:
        return Dimension.size  # `M` too: the known `m` (minutes) never gets here, so it is mega
    known = {spelling.lower(): dim for spelling, (dim, _) in UNITS.items()}
    return known.get(lower) or _LOOKALIKES.get(lower)
