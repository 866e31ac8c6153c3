"""The part of kubectl's JSONPath templates that scripts use: `{.a.b}`, `{.items[*].metadata.name}`,
`{.items[0]}`, `{.data.KEY}` (`\\.` escapes a dot in a key), `{['key']}`, `{range EXPR}...{end}`,
`{"literal"}` and plain text. A list result prints space-separated, a mapping as JSON."""

from __future__ import annotations

import json
import re
from typing import Any


class JsonPathError(ValueError):
    pass


_SEGMENT = re.compile(r"\.((?:\\\.|[^.\[])+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\s*(\*|-?\d+)\s*\]|\.\.")


def _tokens(template: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            out.append(("text", template[i:]))
            break
        if start > i:
            out.append(("text", template[i:start]))
        end = template.find("}", start)
        if end < 0:
            raise JsonPathError(f"unclosed action in {template!r}")
        out.append(("expr", template[start + 1:end].strip()))
        i = end + 1
    return out


def _select(data: Any, path: str) -> list[Any]:
    path = path.strip()
    if path in ("", "@", "$", "."):
        return [data]
    if path.startswith(("@", "$")):
        path = path[1:]
    results, pos = [data], 0
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        if not match:
            raise JsonPathError(f"unrecognized identifier in {path!r} at {pos}")
        pos = match.end()
        key = match.group(1) or match.group(2) or match.group(3)
        index = match.group(4)
        nxt: list[Any] = []
        for item in results:
            if key is not None:
                key_text = key.replace("\\.", ".")
                if isinstance(item, dict) and key_text in item:
                    nxt.append(item[key_text])
            elif index == "*":
                nxt.extend(item if isinstance(item, list) else item.values() if isinstance(item, dict) else [])
            elif index is not None and isinstance(item, list):
                i = int(index)
                if -len(item) <= i < len(item):
                    nxt.append(item[i])
        results = nxt
    return results


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def render(template: str, data: Any) -> str:
    tokens = _tokens(template)
    out, _ = _render(tokens, 0, data)
    return out


def _render(tokens: list[tuple[str, str]], i: int, data: Any) -> tuple[str, int]:
    out = []
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "text":
            out.append(value)
        elif value == "end":
            return "".join(out), i
        elif value.startswith("range "):
            items = _select(data, value[len("range "):])
            body_end = i
            for item in items:
                text, body_end = _render(tokens, i + 1, item)
                out.append(text)
            if not items:
                _, body_end = _render(tokens, i + 1, None)
            i = body_end
        elif value.startswith(('"', "'")):
            out.append(json.loads(value) if value.startswith('"') else value.strip("'"))
        else:
            out.append(" ".join(_text(v) for v in _select(data, value)))
        i += 1
    return "".join(out), i
