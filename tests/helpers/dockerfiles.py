"""Reading a Dockerfile and its build context without Docker: the instructions, the exec-form
ENTRYPOINT and CMD, the files `docker build` sends (the context less what .dockerignore keeps out),
and the two images of the repository."""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from helpers import ROOT


@dataclass(frozen=True)
class Image:
    name: str
    dockerfile: Path
    context: Path
    pyproject: Path  # what `pip install` in the image installs

    @property
    def ignore_file(self) -> Path:
        """BuildKit reads <Dockerfile>.dockerignore beside the Dockerfile first, then the context's."""
        beside = self.dockerfile.with_name(self.dockerfile.name + ".dockerignore")
        return beside if beside.exists() else self.context / ".dockerignore"


HARNESS = Image("harness", ROOT / "docker" / "harness.Dockerfile", ROOT, ROOT / "pyproject.toml")
SUBSTRATE = Image("spine", ROOT / "library" / "substrates" / "spine" / "app" / "Dockerfile",
                  ROOT / "library" / "substrates" / "spine" / "app",
                  ROOT / "library" / "substrates" / "spine" / "app" / "pyproject.toml")
IMAGES = (HARNESS, SUBSTRATE)


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, its arguments) in order, continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, rest = pending.strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
        pending = ""
    return found


def exec_form(dockerfile: Path, keyword: str) -> list[str] | None:
    """The last ENTRYPOINT or CMD, which must be in exec form (a JSON list)."""
    values = [rest for word, rest in instructions(dockerfile) if word == keyword]
    if not values:
        return None
    argv = json.loads(values[-1])
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), f"{keyword} is not in exec form"
    return argv


def copy_sources(dockerfile: Path) -> list[str]:
    """The context paths COPY and ADD name (not those copied from another stage)."""
    sources = []
    for word, rest in instructions(dockerfile):
        if word in ("COPY", "ADD"):
            words = rest.split()
            if any(w.startswith("--from") for w in words):
                continue
            sources += [w for w in words[:-1] if not w.startswith("--")]
    return sources


def _pattern(text: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match, plus `**` for any number of directories)."""
    out = ""
    index = 0
    while index < len(text):
        if text.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
        elif text.startswith("**", index):
            out += ".*"
            index += 2
        elif text[index] == "*":
            out += "[^/]*"
            index += 1
        elif text[index] == "?":
            out += "[^/]"
            index += 1
        else:
            out += re.escape(text[index])
            index += 1
    return re.compile(out)


@dataclass(frozen=True)
class Rule:
    exception: bool  # `!PATTERN`: brought back in
    source: str
    pattern: re.Pattern[str]


def ignore_rules(text: str) -> list[Rule]:
    """The rules of a .dockerignore, in order."""
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        source = (line[1:].strip() if exception else line).strip("/").removeprefix("./")
        rules.append(Rule(exception, source, _pattern(source)))
    return rules


def ignored(relative: str, rules: list[Rule]) -> bool:
    """Whether the context path is kept out: the last rule matching it or a directory above it decides."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for rule in rules:
        if any(rule.pattern.fullmatch(prefix) for prefix in prefixes):
            result = not rule.exception
    return result


def sent_files(image: Image, rules: list[Rule] | None = None) -> list[str]:
    """The context's files `docker build` sends, relative to it (a directory kept out that no
    exception could bring anything back from is not walked: .venv holds tens of thousands)."""
    if rules is None:
        rules = ignore_rules(image.ignore_file.read_text()) if image.ignore_file.exists() else []
    found = []
    for directory, subdirs, files in os.walk(image.context):
        base = Path(directory).relative_to(image.context).as_posix()
        base = "" if base == "." else base + "/"
        subdirs[:] = [d for d in subdirs if not (ignored(base + d, rules) and not any(
            r.exception and ("**" in r.source or r.source.startswith(base + d + "/")) for r in rules))]
        found += [base + name for name in files if not ignored(base + name, rules)]
    return sorted(found)


def installed_commands(pyproject: Path) -> dict[str, str]:
    """The console scripts the package installs: name -> "module:attribute"."""
    return dict(tomllib.loads(pyproject.read_text())["project"].get("scripts", {}))


def installed_packages(pyproject: Path) -> list[str]:
    return list(tomllib.loads(pyproject.read_text()).get("tool", {}).get("setuptools", {}).get("packages", []))
