"""Shared test fixtures: the repository root as working directory (specs are named
relative to it, as a user would), and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from arenac.cli import main

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def task_paths() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tasks").glob("*.arena"))


os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")
