"""Golden bundles: tests/golden/<case>/spec.arena compiles to exactly the bundles of
tests/golden/<case>/expected/ (the substrate's chart files, which the golden tree does not copy,
to the digests its manifests pin), and its lowered task and matrix are ir.json and matrix.json.

Refresh with `python tests/refresh.py golden`, then review `git diff tests/golden`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.golden import STAGES, golden_bundle, golden_cases, golden_differences, stage_files

CASES = golden_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bundle(case: Path, tmp_path):
    golden_bundle(case, tmp_path)
    assert golden_differences(tmp_path, case / "expected") == [], f"{case.name} differs from its golden bundles"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_stages(case: Path):
    """The IR and the matrix, pinned beside the bundles: a change shows at the stage that made it."""
    dumps = stage_files(case)
    assert sorted(dumps) == sorted(STAGES)
    for name, text in dumps.items():
        assert text == (case / name).read_text(encoding="utf-8"), f"{case.name}: {name} differs from the golden file"
