"""Shared test fixtures: the repository root as working directory (specs are named
relative to it, as a user would), a CLI runner, the guard that keeps the `live` marker
truthful, and the live tests' reruns after an overload with the machine's state in a failure's
report (tests/helpers/overload.py). Shared helpers live in the helpers package (tests/helpers/),
not here."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from helpers import ROOT, LiveWithoutMarker
from helpers.overload import (  # noqa: F401 (the reruns' hooks and fixture, registered by their names here)
    _overload_looks_under_basetemp,
    pytest_collection_modifyitems,
    pytest_runtest_makereport,
    pytest_runtest_setup,
)


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from arenac.cli import main

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")

# The per-user cache (arenac/core/cache.py) of a test run is its own, never the user's, and is
# filled first by another process: every test then compiles with the library and the parser read
# back from it (what a second `arenac check` does), so the goldens and the diagnostics corpus pin
# that path; tests/lower/test_library_cache.py compares it with loading and building afresh.
_CACHE = tempfile.mkdtemp(prefix="arenac-test-cache-")
os.environ["ARENAC_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)
subprocess.run([sys.executable, "-c", "from arenac.lower.library import load_library; load_library()"],
               check=True, cwd=ROOT)


@pytest.fixture(autouse=True)
def _live_parts_need_the_marker(request, monkeypatch):
    """Only a test marked `live` may spawn a spine process (PostgreSQL, Redis, a service) or launch
    an episode worker: `pytest -m "not live"` stays a fast compiler-and-logic run, and the marker
    says truthfully which tests need the machine's cores. A subprocess `arenac run` is not seen
    here; such tests are marked by hand."""
    if request.node.get_closest_marker("live") is not None:
        return

    def refuse(*args, **kwargs):
        raise LiveWithoutMarker(f"{request.node.nodeid} starts a live part: mark it @pytest.mark.live")

    import arenac.runner.launch as launch
    import arenac.runner.worker as worker
    import arenac.substrate.spine.postgres as postgres
    import arenac.substrate.spine.redis_local as redis_local
    import arenac.substrate.spine.stack as stack

    for module in (postgres, redis_local, stack):
        monkeypatch.setattr(module, "spawn", refuse)
    # the runner's launcher holds its own reference (imported by name); the module's is patched too
    monkeypatch.setattr(worker, "run_in_worker", refuse)
    monkeypatch.setattr(launch, "run_in_worker", refuse)
