"""A small deterministic TOML writer for the export's own documents (task.toml, dataset.toml).

Contract: `dumps(data)` writes a mapping whose values are strings, integers, finite floats,
booleans, lists of those, mappings (a `[table]`) and lists of mappings (an `[[array of tables]]`),
keys in the order given: a table's plain values first, then its sub-tables, then its arrays of
tables. Strings are TOML basic strings (JSON's escapes are TOML's). The same input gives the same
bytes; nothing else is supported (a value of another type is a TypeError: a bug of the caller).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def dumps(data: Mapping[str, Any], header: str = "") -> str:
    lines: list[str] = [f"# {line}".rstrip() for line in header.splitlines()]
    _table(lines, (), data)
    return "\n".join(lines).strip("\n") + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _table(lines: list[str], path: tuple[str, ...], data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if not _is_table(value) and not _is_table_array(value):
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in data.items():
        if _is_table(value):
            lines += ["", f"[{'.'.join(map(_key, (*path, key)))}]"]
            _table(lines, (*path, key), value)
    for key, value in data.items():
        if _is_table_array(value):
            for item in value:
                lines += ["", f"[[{'.'.join(map(_key, (*path, key)))}]]"]
                _table(lines, (*path, key), item)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"TOML has no {value!r} here")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")
