"""Reading a campaign file: TOML (`.toml`) or YAML (`.yaml`, `.yml`) into a `CampaignSpec`
(arenac/model/campaign.py), every mistake reported at its file, line and column.

Contract:
- `load_campaign(path) -> CampaignFile` (the spec, and where each key is written), or
  `CampaignFileError` carrying every problem found, each a `FileProblem` (file as given, 1-based
  line and column, message): a file that cannot be read, a syntax error (where the parser
  stopped), and every schema error (an unknown key, a value of the wrong type or out of range, a
  misnamed agent), at the key or value it concerns.
- YAML positions are the parser's own (its nodes' marks). TOML's parser gives none for valid
  syntax, so a schema error is placed at the line of the key it names, found by scanning the file's
  tables and keys (`[table]`, `[[array]]`, `key =`, dotted and quoted keys); where a key cannot be
  found (it is missing), at the nearest enclosing table that can, else line 1.
- It only reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arenac.model.campaign import CampaignSpec

SUFFIXES = (".toml", ".yaml", ".yml")
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class FileProblem:
    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class CampaignFileError(Exception):
    def __init__(self, problems: list[FileProblem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


@dataclass(frozen=True)
class CampaignFile:
    """A campaign file read and validated, and where each of its keys is written (for a problem
    found later, such as a selector that matches no variant)."""

    path: Path
    spec: CampaignSpec
    locate: Callable[[Loc], tuple[int, int]]

    def problem(self, loc: Loc, message: str) -> FileProblem:
        return FileProblem(self.path.as_posix(), *self.locate(loc), f"{_dotted(loc)}: {message}")


def load_campaign(path: Path) -> CampaignFile:
    name = path.as_posix()
    if path.suffix not in SUFFIXES:
        raise CampaignFileError([FileProblem(name, 1, 1, f"a campaign file is TOML or YAML ({', '.join(SUFFIXES)}), "
                                                         f"not {path.suffix or 'a file without a suffix'}")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CampaignFileError([FileProblem(name, 1, 1, f"cannot be read: {error}")]) from None
    if path.suffix == ".toml":
        data, locate = _toml(name, text)
    else:
        data, locate = _yaml(name, text)
    try:
        return CampaignFile(path, CampaignSpec.model_validate(data), locate)
    except ValidationError as error:
        problems = [FileProblem(name, *locate(loc), message) for loc, message in _schema_errors(error)]
        raise CampaignFileError(sorted(problems, key=lambda p: (p.line, p.column))) from None


def _schema_errors(error: ValidationError) -> list[tuple[Loc, str]]:
    """(location, message) per schema error, most specific first. A container's "too short"
    that only follows from an item refused inside it is left out (pydantic reports both)."""
    errors = error.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    found = []
    for entry, loc in zip(errors, locs, strict=True):
        if entry["type"] == "too_short" and any(other[:len(loc)] == loc and len(other) > len(loc) for other in locs):
            continue
        key = loc[:-1] if loc and loc[-1] == "[key]" else loc
        where = _dotted(key[:-1] if loc and loc[-1] == "[key]" else key) or "the file"
        what = "unknown key" if entry["type"] == "extra_forbidden" else entry["msg"][0].lower() + entry["msg"][1:]
        if loc and loc[-1] == "[key]":  # the only keys with a pattern: the agents' names
            what = (f"{loc[-2]!r} is not an agent name: lower-case letters, digits, '.', '_' and '-', "
                    "starting with a letter or digit (it names the agent's directory of runs)")
        found.append((key, f"{where}: {what}"))
    return found


def _dotted(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# ---- TOML -----------------------------------------------------------------------------------------
def _toml(name: str, text: str) -> tuple[Any, Callable[[Loc], tuple[int, int]]]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line, column = _toml_error_position(error)
        message = str(error).split(" (at ")[0]
        raise CampaignFileError([FileProblem(name, line, column, f"TOML syntax: {message}")]) from None
    keys = _toml_keys(text)

    def locate(loc: Loc) -> tuple[int, int]:
        for length in range(len(loc), 0, -1):
            if loc[:length] in keys:
                return keys[loc[:length]]
        return 1, 1

    return data, locate


def _toml_error_position(error: Exception) -> tuple[int, int]:
    line = getattr(error, "lineno", None)  # Python 3.14 adds them; 3.11 has only the message
    column = getattr(error, "colno", None)
    if line is None:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        line, column = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
    return line, column or 1


_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _key_parts(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", dotted))


def _toml_keys(text: str) -> dict[Loc, tuple[int, int]]:
    """Where each table and key is written: location -> (line, column) of its first character.
    Arrays of tables count their entries, so `[[variants]]`'s second entry is ("variants", 1)."""
    where: dict[Loc, tuple[int, int]] = {}
    counts: dict[Loc, int] = {}
    table: Loc = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TABLE.match(line)
        if header:
            path: Loc = _key_parts(header.group(2))
            if header.group(1) == "[[":
                index = counts.get(path, 0)
                counts[path] = index + 1
                where.setdefault(path, (number, line.index("[") + 1))
                path = (*path, index)
            table = path
            where.setdefault(table, (number, line.index("[") + 1))
            continue
        key = _KEY.match(line)
        if key:
            column = len(line) - len(line.lstrip()) + 1
            where.setdefault((*table, *_key_parts(key.group(1))), (number, column))
    return where


# ---- YAML -----------------------------------------------------------------------------------------
def _yaml(name: str, text: str) -> tuple[Any, Callable[[Loc], tuple[int, int]]]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = getattr(error, "problem", None) or str(error)
        raise CampaignFileError([FileProblem(name, line, column, f"YAML syntax: {problem}")]) from None

    def locate(loc: Loc) -> tuple[int, int]:
        node, mark = root, (root.start_mark if root is not None else None)
        for part in loc:
            entry = _yaml_child(node, part)
            if entry is None:
                break
            node, mark = entry[1], entry[0].start_mark
        return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)

    return data, locate


def _yaml_child(node: Any, part: str | int) -> tuple[Any, Any] | None:
    """The entry `part` of a node: for a mapping, its key's node (where the entry is written; the
    walk goes on into its value); for a sequence, the item."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == part:
                return key, value
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part], node.value[part]
    return None
