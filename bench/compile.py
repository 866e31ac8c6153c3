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
# bundles are written where `arenac compile` writes them by default: build/ in the checkout (on
# this machine /tmp sits on a disk that charges ten times more per file created)
OUT_PARENT = ROOT / "build"
OUT_PARENT.mkdir(exist_ok=True)


def per_variant_cost() -> None:
    from arenac.lower.library import load_library
    from arenac.pipeline import compile_paths, render_variant, write_bundles
    from arenac.variants import built

    compilation = compile_paths(["tasks"])
    variants = sum(len(t.variants) for t in compilation.tasks)
    timings = []
    with tempfile.TemporaryDirectory(dir=OUT_PARENT, prefix=".bench-") as out:
        for _ in range(5):
            start = time.perf_counter()
            write_bundles(compilation, Path(out))
            timings.append(time.perf_counter() - start)
    best = min(timings)
    library = load_library()
    rebuild = render_only = 0.0
    for task in compilation.tasks:
        spec = task.lowered.spec
        start = time.perf_counter()
        realised = list(built(spec, library))
        rebuild += time.perf_counter() - start
        start = time.perf_counter()
        for variant in realised:
            render_variant(variant, library, compilation.sources[spec.source].text)
        render_only += time.perf_counter() - start
    print(f"tasks/: {len(compilation.tasks)} tasks, {variants} variants")
    print(f"rebuild each variant from its checked spec: {rebuild * 1000 / variants:.2f} ms per variant")
    print(f"render only (in memory): {render_only * 1000 / variants:.2f} ms per variant")
    print(f"build (rebuild + render + write): {best * 1000 / variants:.2f} ms per variant (best of 5; median "
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


def synthetic_text(sizes: int) -> str:
    """sizes x 10 overflows x 2 access surfaces variants."""
    return SYNTHETIC.format(sizes=" | ".join(str(i) for i in range(1, sizes + 1)),
                            overflows=" | ".join(str(i) for i in range(0, 10)))


def compile_and_build_traced(sizes: int) -> None:
    """In a fresh process: compile a synthetic matrix and write its bundles, the way
    `arenac compile` does, with tracemalloc on from the start; print variants, seconds and
    the traced peak in bytes."""
    from arenac.lower.library import load_library

    load_library()  # the library is read once per process whatever the matrix: not counted
    from arenac.core.source import SourceFile
    from arenac.pipeline import compile_sources, write_bundles

    text = synthetic_text(sizes)
    tracemalloc.start()
    with tempfile.TemporaryDirectory(dir=OUT_PARENT, prefix=".bench-") as out:
        start = time.perf_counter()
        compilation = compile_sources({"synthetic.arena": SourceFile("synthetic.arena", text)})
        written = write_bundles(compilation, Path(out))
        elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    print(len(written), elapsed, peak)


def synthetic_matrix() -> None:
    results = {}
    for sizes in (5, 50):  # 100 and 1,000 variants
        line = subprocess.run([sys.executable, __file__, "--traced", str(sizes)], check=True,
                              capture_output=True, text=True).stdout.split()
        results[int(line[0])] = (float(line[1]), int(line[2]))
    (small, (_, small_peak)), (large, (elapsed, large_peak)) = sorted(results.items())
    growth = (large_peak - small_peak) / (large - small)
    print(f"synthetic matrix: {large} variants compiled and written in {elapsed:.2f} s "
          f"({elapsed * 1000 / large:.2f} ms each, checking included)")
    print(f"traced peak memory of compile + build: {small} variants {small_peak / 2**20:.2f} MiB, "
          f"{large} variants {large_peak / 2**20:.2f} MiB ({growth / 1024:.2f} KiB per further variant)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--traced"]:
        compile_and_build_traced(int(sys.argv[2]))
        sys.exit(0)
    per_variant_cost()
    cold_check()
    synthetic_matrix()
