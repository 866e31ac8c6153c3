"""What kind of value a substrate config key holds, read off the substrate descriptor.

The descriptor lists each service's config keys with their healthy values, as strings (the
way a ConfigMap holds them); it has no separate type column, so a key's type follows from
the descriptor by the substrates' naming conventions:

- a key whose name ends in `_MS` or `_S` holds a duration, in milliseconds or seconds;
- otherwise a healthy value that is a plain number (`10`, `1.0`) makes a number;
- a healthy value with a size unit (`256mb`, `64Mi`) makes a size, in bytes;
- anything else (`atomic`, `spine_app`, `1.4.2`, an empty list) is a name.

A guard compares the key's raw value, so its bound is converted to the key's own unit:
`guard config(channel.READ_CONSISTENCY_HOLD_MS) <= 1s` stores 1000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from arenac.core.units import Dimension

_PLAIN_NUMBER = re.compile(r"^\d+(\.\d+)?$")
_SIZE = re.compile(r"^\d+(\.\d+)?\s*(k|kb|m|mb|g|gb|Ki|Mi|Gi)$", re.IGNORECASE)


@dataclass(frozen=True)
class KeyType:
    """A config key's dimension (None: a name) and its own unit in base units (ms keys: 0.001)."""

    dimension: Dimension | None
    unit: float = 1.0
    unit_name: str = ""  # how a plain number written for the key is read: "milliseconds", ...

    @property
    def is_name(self) -> bool:
        return self.dimension is None


def key_type(key: str, healthy: str) -> KeyType:
    """The type of config key `key` whose healthy value is `healthy` (see the module docstring)."""
    if key.endswith("_MS"):
        return KeyType(Dimension.duration, 0.001, "milliseconds")
    if key.endswith("_S"):
        return KeyType(Dimension.duration, 1.0, "seconds")
    value = healthy.strip()
    if _PLAIN_NUMBER.match(value):
        return KeyType(Dimension.number)
    if _SIZE.match(value):
        return KeyType(Dimension.size, 1.0, "bytes")
    return KeyType(None)
