"""`harbor lint --json TASK_DIR...` where Docker's Compose plugin is missing: run with Harbor's own
Python (3.12, harbor 0.25.0), never imported by the tests.

Everything is Harbor's: its rule selection (`harbor.cli.lint._selected_rules`: the default rules,
a dataset.toml's and a task.toml's [metadata.harbor.lint]) and `harbor.lint.lint_task`, every rule
of it. One call is replaced: `harbor.lint.compose._load_compose`, which asks `docker compose
config --format json` for the compose file's normalized model. The stand-in reads the YAML itself
and normalizes the few things Harbor's compose rules read (services' image, build, privileged,
cap_add, hooks, volumes in their long form; top-level volumes). It refuses what it cannot
normalize (variable interpolation, `extends`, `include`, short volume syntax it does not know) by
returning None, which Harbor reports as a compose file Docker could not load: a stricter result,
never a laxer one.

Prints the findings as `harbor lint --json` does; exit 1 if any, else 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from harbor.cli.lint import _selected_rules
from harbor.lint import compose as harbor_compose
from harbor.lint import lint_task
from harbor.lint.models import LintConfig, sort_findings


def _volume(entry: Any) -> dict[str, Any] | None:
    if isinstance(entry, dict):
        return entry
    if not isinstance(entry, str):
        return None
    parts = entry.split(":")
    source, target = (parts[0], parts[1]) if len(parts) > 1 else (None, parts[0])
    kind = "bind" if source and source.startswith((".", "/", "~")) else "volume"
    return {"type": kind, "source": source, "target": target, "read_only": parts[2:3] == ["ro"]}


def load_compose(path: Path, *, task_env: dict[str, str] | None = None) -> dict[str, Any] | None:
    text = path.read_text()
    if "${" in text or "$" in text.replace("$$", ""):
        return None
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or "include" in data:
        return None
    services = data.get("services") or {}
    for service in services.values():
        if not isinstance(service, dict) or "extends" in service:
            return None
        volumes = [_volume(v) for v in service.get("volumes", [])]
        if any(v is None for v in volumes):
            return None
        service["volumes"] = volumes
    data["services"] = services
    data["volumes"] = data.get("volumes") or {}
    return data


def main(args: list[str]) -> int:
    """ARGS: `[--select RULE|ALL]... [--extend-select RULE|ALL]... TASK_DIR...`, as `harbor lint`'s."""
    options: dict[str, list[str]] = {"select": [], "extend-select": []}
    task_dirs = []
    words = iter(args)
    for word in words:
        if word.removeprefix("--") in options:
            options[word.removeprefix("--")].append(next(words))
        else:
            task_dirs.append(word)
    config = LintConfig.model_validate({"select": options["select"] or None, "extend-select": options["extend-select"]})
    harbor_compose._load_compose = load_compose  # the one replaced call (see the docstring)
    findings = []
    for root in dict.fromkeys(Path(d).resolve() for d in task_dirs):
        findings += lint_task(root, selected_rules=_selected_rules(root, config))
    print(json.dumps([finding.model_dump() for finding in sort_findings(findings)], indent=2))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
