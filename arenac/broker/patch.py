"""The three patch types of `kubectl patch --type`: json (RFC 6902), merge (RFC 7386) and strategic.

Strategic merge is merge with the Kubernetes list semantics the objects here need: lists of
objects that carry a `name` (containers, env, ports, volumes) are merged by name, and an item
`{"name": X, "$patch": "delete"}` removes X; other lists are replaced.
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    pass


def apply_patch(obj: dict[str, Any], patch: Any, patch_type: str) -> dict[str, Any]:
    if patch_type == "json":
        if not isinstance(patch, list):
            raise PatchError("json patch must be a list of operations")
        return _json_patch(copy.deepcopy(obj), patch)
    if not isinstance(patch, dict):
        raise PatchError(f"{patch_type} patch must be a JSON object")
    if patch_type == "merge":
        return _merge(obj, patch, strategic=False)
    if patch_type == "strategic":
        return _merge(obj, patch, strategic=True)
    raise PatchError(f'--type must be one of [json merge strategic], not "{patch_type}"')


def _merge(target: Any, patch: Any, strategic: bool) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif strategic and isinstance(value, list) and _named(value) and isinstance(result.get(key), list):
            result[key] = _merge_named(result[key], value)
        else:
            result[key] = _merge(result.get(key), value, strategic)
    return result


def _named(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(item, dict) and "name" in item for item in items)


def _merge_named(current: list[Any], patch: list[dict[str, Any]]) -> list[Any]:
    merged = copy.deepcopy(current)
    for item in patch:
        index = next((i for i, old in enumerate(merged) if isinstance(old, dict) and old.get("name") == item["name"]),
                     None)
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append(_merge({}, item, strategic=True))
        else:
            merged[index] = _merge(merged[index], item, strategic=True)
    return merged


def _json_patch(doc: Any, operations: list[Any]) -> Any:
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], _pointer(op["path"])
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f'operation "{kind}" needs a value')
        if kind == "add":
            doc = _put(doc, path, copy.deepcopy(op["value"]), insert=True)
        elif kind == "replace":
            _get(doc, path)
            doc = _put(doc, path, copy.deepcopy(op["value"]), insert=False)
        elif kind == "remove":
            _remove(doc, path)
        elif kind in ("move", "copy"):
            value = _get(doc, _pointer(op.get("from", "")))
            if kind == "move":
                _remove(doc, _pointer(op["from"]))
            doc = _put(doc, path, copy.deepcopy(value), insert=True)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"test operation failed at {op['path']}")
        else:
            raise PatchError(f'unknown json patch operation "{kind}"')
    return doc


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise PatchError(f'json pointer must start with "/": {text!r}')
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _step(container: Any, part: str, insert: bool = False) -> Any:
    if isinstance(container, dict):
        return part
    if isinstance(container, list):
        if part == "-" and insert:
            return len(container)
        try:
            index = int(part)
        except ValueError:
            raise PatchError(f"not a list index: {part!r}") from None
        if not 0 <= index <= len(container) - (0 if insert else 1):
            raise PatchError(f"list index out of range: {index}")
        return index
    raise PatchError(f"cannot descend into a {type(container).__name__} at {part!r}")


def _get(doc: Any, path: list[str]) -> Any:
    for part in path:
        key = _step(doc, part)
        if isinstance(doc, dict) and key not in doc:
            raise PatchError(f"path not found: /{'/'.join(path)}")
        doc = doc[key]
    return doc


def _put(doc: Any, path: list[str], value: Any, insert: bool) -> Any:
    if not path:
        return value
    parent = _get(doc, path[:-1])
    key = _step(parent, path[-1], insert)
    if isinstance(parent, list) and insert:
        parent.insert(key, value)
    else:
        parent[key] = value
    return doc


def _remove(doc: Any, path: list[str]) -> None:
    if not path:
        raise PatchError("cannot remove the whole document")
    parent = _get(doc, path[:-1])
    key = _step(parent, path[-1])
    if isinstance(parent, dict) and key not in parent:
        raise PatchError(f"path not found: /{'/'.join(path)}")
    del parent[key]
