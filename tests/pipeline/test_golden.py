"""Golden bundles: tests/golden/<case>/spec.arena compiles to exactly tests/golden/<case>/expected/.

Refresh with `python tests/refresh.py`, then review `git diff tests/golden`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.golden import golden_bundle, golden_cases
from helpers.trees import tree

CASES = golden_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bundle(case: Path, tmp_path):
    golden_bundle(case, tmp_path)
    actual, expected = tree(tmp_path), tree(case / "expected")
    assert sorted(actual) == sorted(expected)
    for path in expected:
        assert actual[path] == expected[path], f"{case.name}: {path} differs from the golden file"
