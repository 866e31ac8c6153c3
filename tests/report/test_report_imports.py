"""A report reads ledgers, never drives load: making one in a new process imports none of the load
generator's network stack (aiohttp), nor a datastore client (arenac/loadgen/__init__.py exports
lazily)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.report_runs import graded_run

PROBE = """
import sys
from pathlib import Path
from arenac.report.collect import collect
from arenac.report.write import write_report
write_report(collect(Path(sys.argv[1]), 50), Path(sys.argv[2]))
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "asyncpg", "redis"))))
"""


def test_a_report_imports_no_network_client(tmp_path: Path) -> None:
    graded_run(tmp_path / "run", "fail")
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "run"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "report.html").is_file()  # the probe made a report, so it saw its imports
    assert done.stdout.strip() == ""


def test_the_load_generator_s_names_still_resolve_on_use() -> None:
    import arenac.loadgen as loadgen

    assert callable(loadgen.run_load) and callable(loadgen.load_ledger) and loadgen.CLIENT_TIMEOUT_S > 0
    assert set(loadgen.__all__) == set(loadgen._HOME)
