"""Compiler benchmark: prints per-variant render+write cost, `arenac check` cold start, and
memory on a synthetic 1,000-variant matrix.

    .venv/bin/python bench/compile.py

Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)


def per_variant_cost() -> None:
    from arenac.bundle import manifest_for, write_bundle  # noqa: F401
    from arenac.build import build
    from arenac.pipeline import compile_paths

    compilation = compile_paths(["tasks"])
    variants = sum(len(t.expansion.variants) for t in compilation.tasks)
    timings = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(5):
            start = time.perf_counter()
            build(compilation, Path(out))
            timings.append(time.perf_counter() - start)
    best = min(timings)
    from arenac.build import render_variant
    from arenac.catalog import load_library

    library = load_library()
    start = time.perf_counter()
    for task in compilation.tasks:
        spec = task.lowered.spec
        for variant in task.expansion.variants:
            render_variant(variant, library.substrates[spec.substrate], compilation.sources[spec.source].text)
    render_only = time.perf_counter() - start
    print(f"tasks/: {len(compilation.tasks)} tasks, {variants} variants")
    print(f"render only (in memory): {render_only * 1000 / variants:.2f} ms per variant")
    print(f"render + write: {best * 1000 / variants:.2f} ms per variant (best of 5; median "
          f"{statistics.median(timings) * 1000 / variants:.2f} ms)")


def cold_check() -> None:
    spec = "tasks/revoked-grant.arena"
    times = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "arenac.cli", "check", spec], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"arenac check {spec} (new process): median {statistics.median(times):.3f} s, best {min(times):.3f} s")


SYNTHETIC = """
task synthetic {{
  title = "synthetic"
  substrate = spine
  instruction = "x"
  fault pool = spine.pool_size(service: message, size: {sizes}, overflow: {overflows}) {{
    layer = runtime
  }}
  access = confined | shell
  gate outcome {{
    error_rate(send) <= 1%
  }}
  gate safety {{
    survives restart(message)
  }}
  oracle {{
    repair pool
    declare
  }}
}}
"""


def synthetic_matrix() -> None:
    from arenac.build import build
    from arenac.pipeline import compile_sources
    from arenac.source import SourceFile

    sizes = " | ".join(str(i) for i in range(1, 51))
    overflows = " | ".join(str(i) for i in range(0, 10))
    text = SYNTHETIC.format(sizes=sizes, overflows=overflows)  # 50 x 10 x 2 access = 1,000 variants
    compilation = compile_sources({"synthetic.arena": SourceFile("synthetic.arena", text)})
    variants = compilation.tasks[0].expansion.variants
    tracemalloc.start()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        # memory must not grow per variant: measure the peak after 100 and after all variants
        from arenac.catalog import load_library
        from arenac.build import render_variant
        from arenac.bundle import write_bundle
        from arenac.render.bundle_files import EXECUTABLES

        entry = load_library().substrates["spine"]
        peaks = {}
        for index, variant in enumerate(variants, 1):
            files = render_variant(variant, entry, text)
            write_bundle(Path(out) / variant.id, files, EXECUTABLES)
            del files
            if index in (100, len(variants)):
                peaks[index] = tracemalloc.get_traced_memory()[1]
        elapsed = time.perf_counter() - start
    tracemalloc.stop()
    print(f"synthetic matrix: {len(variants)} variants in {elapsed:.2f} s ({elapsed * 1000 / len(variants):.2f} ms each)")
    print(f"traced peak memory after 100 variants: {peaks[100] / 2**20:.1f} MiB; after {len(variants)}: "
          f"{peaks[len(variants)] / 2**20:.1f} MiB")
    del build


if __name__ == "__main__":
    per_variant_cost()
    cold_check()
    synthetic_matrix()
