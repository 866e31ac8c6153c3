"""Refresh the pinned expectations: diagnostics corpus and golden bundles.

    python tests/refresh.py

Run it from the repository root after an intended change to messages or bundle
output, then review the diff (`git diff tests/`) before committing.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
DIAGNOSTICS = ROOT / "tests" / "diagnostics"
GOLDEN = ROOT / "tests" / "golden"


def check_output(spec: Path) -> str:
    """What `arenac check SPEC` prints (stderr and stdout) and its exit code."""
    from arenac.cli import main

    result = CliRunner().invoke(main, ["check", spec.relative_to(ROOT).as_posix()])
    return f"{result.output}exit code: {result.exit_code}\n"


def golden_bundle(case: Path, out: Path) -> None:
    from arenac.pipeline import compile_paths, write_bundles

    write_bundles(compile_paths([(case / "spec.arena").relative_to(ROOT).as_posix()]), out)


def main() -> int:
    import os

    os.chdir(ROOT)
    # a case is one spec, or a directory checked as a whole (tests/test_diagnostics_corpus.py)
    for case in sorted([*DIAGNOSTICS.glob("*.arena"), *(p for p in DIAGNOSTICS.iterdir() if p.is_dir())]):
        expected = case.parent / f"{case.stem if case.is_file() else case.name}.expected"
        expected.write_text(check_output(case), encoding="utf-8")
    for case in sorted(p for p in GOLDEN.iterdir() if (p / "spec.arena").is_file()):
        expected = case / "expected"
        shutil.rmtree(expected, ignore_errors=True)
        golden_bundle(case, expected)
    print("refreshed diagnostics and golden bundles; review with `git diff tests/`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
