"""Refresh the pinned expectations: the diagnostics corpus and the golden bundles.

    python tests/refresh.py                  # both
    python tests/refresh.py diagnostics      # tests/diagnostics/*.expected only
    python tests/refresh.py golden           # tests/golden/*/: expected/, ir.json, matrix.json only

Run it after an intended change to messages or bundle output, then review the diff (`git diff
tests/`) before committing. It runs from the repository root whatever the working directory.
"""

from __future__ import annotations

import os
import sys

from helpers import ROOT
from helpers.golden import golden_cases, refresh_case
from helpers.pinned import check_output, corpus_cases, expected_path

PARTS = ("diagnostics", "golden")


def refresh_diagnostics() -> None:
    # a case is one spec, or a directory checked as a whole (helpers/pinned.py)
    for case in corpus_cases():
        expected_path(case).write_text(check_output(case), encoding="utf-8")


def refresh_golden() -> None:
    # each case's expected/ bundles (but the chart files copied verbatim from the substrate, which
    # the manifest pins), ir.json and matrix.json (helpers/golden.py)
    for case in golden_cases():
        refresh_case(case)


def main(argv: list[str]) -> int:
    parts = argv or list(PARTS)
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        print(f"refresh.py: unknown part {unknown[0]!r}; name {' or '.join(PARTS)}, or none for both", file=sys.stderr)
        return 2
    os.chdir(ROOT)  # specs are named relative to the root, as the tests name them
    if "diagnostics" in parts:
        refresh_diagnostics()
    if "golden" in parts:
        refresh_golden()
    print(f"refreshed {' and '.join(parts)}; review with `git diff tests/`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
