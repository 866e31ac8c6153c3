"""Cold start of `arenac check`: instructions (valgrind's callgrind) and CPU seconds of a new process.

    .venv/bin/python bench/coldstart.py [--checkout DIR] [--arenac PATH] [--runs N] [--cpu-runs N]

For each of `arenac check tasks/revoked-grant.arena` and `arenac check tasks/`, run in CHECKOUT
(default: this one) with the executable ARENAC (default: this interpreter's `arenac`): the
instructions callgrind counts for the whole process (start, imports, the check, the exit) over
RUNS runs (default 2), then the CPU seconds (user + system) over CPU_RUNS runs (default 20) at
`nice 19`, best / lower quartile / median. Before measuring, the commands run once, so Python's
bytecode caches and arenac's per-user cache (arenac/core/cache.py) are warm, as for any check
after the first; PYTHONDONTWRITEBYTECODE is dropped for the same reason, and PYTHONHASHSEED is
fixed. Instruction counts repeat to a few hundred instructions whatever else the machine does;
CPU seconds do not (they move with the neighbours' load and the caches): compare those only
interleaved and on an idle machine. To compare two commits, give each its own checkout and venv
(`git worktree add`, `python -m venv`, `pip install -e .` with the same extras) and run this
against both. Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (["check", "tasks/revoked-grant.arena"], ["check", "tasks/"])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    return env


def instructions(arenac: str, checkout: Path, args: list[str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", arenac, *args],
                          cwd=checkout, env=_env(), capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr}")
    return int(found.group(1))


def cpu_seconds(arenac: str, checkout: Path, args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["nice", "-n", "19", arenac, *args], cwd=checkout, env=_env(), check=True,
                   stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--arenac", default=str(Path(sys.executable).with_name("arenac")))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--cpu-runs", type=int, default=20)
    options = parser.parse_args()
    checkout = options.checkout.resolve()
    for args in COMMANDS:  # warm the bytecode and the per-user cache
        subprocess.run([options.arenac, *args], cwd=checkout, env=_env(), check=True, stdout=subprocess.DEVNULL)
    print(f"checkout {checkout}, arenac {options.arenac}")
    for args in COMMANDS:
        label = "arenac " + " ".join(args)
        if options.runs and shutil.which("valgrind"):
            counts = [instructions(options.arenac, checkout, args) for _ in range(options.runs)]
            print(f"{label}: instructions {', '.join(f'{c:,}' for c in counts)}")
        if options.cpu_runs:
            times = sorted(cpu_seconds(options.arenac, checkout, args) for _ in range(options.cpu_runs))
            quartile = times[len(times) // 4]
            print(f"{label}: CPU s (noisy) best {times[0]:.3f} / lower quartile {quartile:.3f} / "
                  f"median {statistics.median(times):.3f} (n={len(times)})")


if __name__ == "__main__":
    main()
