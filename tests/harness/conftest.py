"""Fixtures for the `arenac harness` tests: compiled bundles whose plans the commands read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from arenac.pipeline import compile_paths, write_bundles
from helpers.harness_plans import TASKS


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harness-bundles")
    write_bundles(compile_paths(list(TASKS)), out)
    return out


@pytest.fixture(scope="session")
def plan_where(compiled: Path) -> Callable[[Callable[[dict], bool]], Path]:
    """The first plan.json (in path order) whose plan satisfies `wanted`."""
    def find(wanted: Callable[[dict], bool]) -> Path:
        for path in sorted(compiled.glob("*/*/plan.json")):
            if wanted(json.loads(path.read_text())):
                return path
        raise AssertionError("no compiled plan fits")

    return find
