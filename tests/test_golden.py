"""Golden bundles: tests/golden/<case>/spec.arena compiles to exactly tests/golden/<case>/expected/.

Refresh with `python tests/refresh.py`, then review `git diff tests/golden`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refresh import GOLDEN, golden_bundle
from test_determinism import tree

CASES = sorted(p for p in GOLDEN.iterdir() if (p / "spec.arena").is_file())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bundle(case: Path, tmp_path):
    golden_bundle(case, tmp_path)
    actual, expected = tree(tmp_path), tree(case / "expected")
    assert sorted(actual) == sorted(expected)
    for path in expected:
        assert actual[path] == expected[path], f"{case.name}: {path} differs from the golden file"
