"""Fixtures of the export's tests: the bundles of tasks/ compiled once, and their Harbor export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arenac.export.harbor import export, find_bundles
from arenac.pipeline import compile_paths, write_bundles
from helpers import task_paths


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build")
    write_bundles(compile_paths(task_paths()), out)
    return out


@pytest.fixture(scope="session")
def exported(build_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor") / "harbor"
    export(find_bundles([build_dir]), out, 1.0)
    return out


@pytest.fixture(scope="session")
def sample(build_dir: Path, exported: Path) -> tuple[Path, Path]:
    """revoked-grant's confined variant (runtime layer; admin API and a database role): its bundle
    and its exported task."""
    for plan in sorted(build_dir.glob("revoked-grant/*/plan.json")):
        if json.loads(plan.read_text())["coordinates"] == {"access": "confined", "grant.layer": "runtime"}:
            return plan.parent, exported / plan.parent.name
    raise AssertionError("revoked-grant has no confined variant")
