"""The golden cases (tests/golden/<case>/): a spec and the bundles it must compile to.

`golden_bundle(case, out)` compiles a case's spec as `arenac compile` would, into OUT/<task>/<variant>/.
"""

from __future__ import annotations

from pathlib import Path

from helpers import ROOT

GOLDEN = ROOT / "tests" / "golden"


def golden_cases() -> list[Path]:
    """Every golden case directory (one holding a spec.arena), sorted."""
    return sorted(p for p in GOLDEN.iterdir() if (p / "spec.arena").is_file())


def golden_bundle(case: Path, out: Path) -> None:
    from arenac.pipeline import compile_paths, write_bundles

    write_bundles(compile_paths([(case / "spec.arena").relative_to(ROOT).as_posix()]), out)
