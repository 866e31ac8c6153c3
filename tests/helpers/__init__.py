"""Helpers the tests share, imported as `from helpers import ...` (pytest puts tests/, the
directory of the top conftest.py, on sys.path); conftest.py files hold fixtures only, and no test
imports another test module. Here: the repository root, the bundled task specs, the live guard's
error. Beside it: `helpers.specs` (small specs and `compile_text`), `helpers.trees` (a directory as
comparable data), `helpers.pinned` (the diagnostics corpus), `helpers.golden` (the golden cases)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/helpers/__init__.py -> the repository


def task_paths() -> list[str]:
    """The bundled task specs, relative to the repository root, as a user names them."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tasks").glob("*.arena"))


class LiveWithoutMarker(AssertionError):
    """A test without the `live` marker tried to start a live part (conftest.py's guard)."""
