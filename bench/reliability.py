"""The runner's fault-injection matrix (arenac/runner/fault_suite.py) as docs/reliability.md.

    sudo .venv/bin/python bench/reliability.py [--time-scale 0.1] [--only PART] > matrix.md

Runs every cell (each part x kill/stop x phase, the full disk and the control), one real episode
each, serially, and prints the Markdown table, then the share of cells as expected. About 45
minutes on 2 cores at time scale 0.1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.fault_suite import all_cells, markdown, run_cell


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-scale", type=float, default=0.1)
    parser.add_argument("--only", help="cells of this part only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arenac-faults-") as work:
        bundle = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), Path(work) / "bundles")[0].path
        results = []
        for cell in all_cells():
            if args.only and cell.part != args.only:
                continue
            result = run_cell(bundle, cell, Path(work) / cell.name, args.time_scale)
            results.append(result)
            print(f"{cell.name}: {result.status} ({result.reason[:100]}) {result.wall_s:.0f} s", file=sys.stderr)
    print(markdown(results))
    met = sum(r.as_expected for r in results)
    print(f"{met}/{len(results)} cells as expected")
    return 0 if met == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
