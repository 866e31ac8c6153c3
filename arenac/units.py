"""Quantities with units, as written in specs (`350ms`, `40s`, `2m`, `1%`, `64Mi`, `40/s`).

Every quantity is normalised to a base unit of its dimension: seconds, a fraction
(1% -> 0.01), bytes, or requests per second. Plain numbers have the dimension
`number`. The checker compares dimensions, never unit spellings.
"""

from __future__ import annotations

import re
from enum import Enum

from pydantic import BaseModel, ConfigDict


class Dimension(str, Enum):
    number = "number"
    duration = "duration"
    fraction = "fraction"
    size = "size"
    rate = "rate"


_UNITS: dict[str, tuple[Dimension, float]] = {
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

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(ms|Ki|Mi|Gi|/s|s|m|h|%)?$")


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
    dimension, factor = _UNITS[unit]
    return Quantity(value=round(float(number) * factor, 9), dimension=dimension, text=text)


def format_seconds(seconds: float) -> str:
    """Canonical spelling of a duration, used in generated artefacts."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{int(round(seconds * 1000))}ms"
