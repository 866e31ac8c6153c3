"""The spine image holds the application and nothing of the compiler, the fault library or a task.

The Dockerfile's build context is library/substrates/spine/app/ alone. Checked here, without
Docker: no file of the context lies under (or is a copy of a file of) arenac/, a fault library
(library/**/faults), tasks/ or the golden specs; the Dockerfile copies only from inside it; its
ENTRYPOINT module is a runnable module of the context (`python -m spine_services --help`, run from
the context with arenac made unimportable); every module of the package imports without arenac;
and the app's own pyproject.toml declares each third-party package the application imports and
builds a wheel holding every module. Each check also refuses a context built to fail it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from helpers import ROOT

CONTEXT = ROOT / "library" / "substrates" / "spine" / "app"
PACKAGE = "spine_services"
# what the image must never hold: the compiler, every fault library, the tasks and golden specs
FORBIDDEN_TREES = (ROOT / "arenac", ROOT / "tasks", ROOT / "tests" / "golden",
                   *sorted((ROOT / "library").glob("**/faults")))
# the distribution of each third-party module the application may import
DISTRIBUTIONS = {"aiohttp": "aiohttp", "asyncpg": "asyncpg", "redis": "redis",
                 "prometheus_client": "prometheus-client", "yaml": "pyyaml"}
NO_ARENAC = """
import sys


class RefuseArenac:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "arenac":
            raise ModuleNotFoundError(f"No module named {name!r} (the image has no arenac)", name=name)
        return None


sys.meta_path.insert(0, RefuseArenac())
"""


def _context_files(context: Path) -> list[Path]:
    """The files `docker build` would send (the .dockerignore drops caches and a host-baked release)."""
    return sorted(p for p in context.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix != ".pyc" and p.name != "IMAGE_RELEASE")


def _forbidden_bytes() -> dict[bytes, Path]:
    return {path.read_bytes(): path for tree in FORBIDDEN_TREES for path in tree.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def context_problems(context: Path) -> list[str]:
    """What in `context` would put the compiler, a fault library or a task into the image."""
    problems = []
    real = context.resolve()
    for tree in FORBIDDEN_TREES:
        if real == tree.resolve() or tree.resolve().is_relative_to(real):
            problems.append(f"the context holds {tree.relative_to(ROOT)}")
    copies = _forbidden_bytes()
    for path in _context_files(context):
        name = path.relative_to(context).as_posix()
        if path.suffix == ".arena" or "faults" in path.parts[len(context.parts):]:
            problems.append(f"{name}: a spec or a fault template")
        elif path.read_bytes() in copies and path.stat().st_size > 0:
            problems.append(f"{name}: a copy of {copies[path.read_bytes()].relative_to(ROOT)}")
    dockerfile = context / "Dockerfile"
    for line in (dockerfile.read_text() if dockerfile.is_file() else "").splitlines():
        words = line.split()
        if words[:1] in (["COPY"], ["ADD"]):
            sources = [w for w in words[1:-1] if not w.startswith("--")]
            problems += [f"Dockerfile copies {s!r}, outside the context or all of it"
                         for s in sources if s.startswith(("/", "..")) or ".." in s.split("/") or s in (".", "./")]
    return problems


def entrypoint_module(dockerfile: Path) -> str:
    match = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", dockerfile.read_text(), re.MULTILINE)
    assert match, "the Dockerfile has an exec-form ENTRYPOINT"
    argv = json.loads(match.group(1))
    assert argv[:2] == ["python", "-m"], argv
    return argv[2]


def _without_arenac(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "no-arenac"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(NO_ARENAC)
    return {**os.environ, "PYTHONPATH": str(blocker), "PYTHONDONTWRITEBYTECODE": "1"}


def test_the_build_context_holds_the_application_alone():
    assert context_problems(CONTEXT) == []
    names = {p.relative_to(CONTEXT).parts[0] for p in _context_files(CONTEXT)}
    assert names == {"Dockerfile", ".dockerignore", "pyproject.toml", PACKAGE}


def test_a_context_with_a_fault_template_a_compiler_file_or_a_copy_from_outside_is_refused(tmp_path):
    bad = tmp_path / "app"
    shutil.copytree(CONTEXT, bad, ignore=shutil.ignore_patterns("__pycache__"))
    assert context_problems(bad) == []
    fault = next((ROOT / "library").glob("substrates/*/faults/*.yaml"))
    shutil.copy(fault, bad / PACKAGE / "defaults.yaml")  # renamed, but the same bytes
    shutil.copy(ROOT / "arenac" / "faults.py", bad / PACKAGE / "helpers.py")
    (bad / "faults").mkdir()
    (bad / "faults" / "x.txt").write_text("a repair\n")
    dockerfile = bad / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY ../../../../arenac /arenac\n")
    problems = context_problems(bad)
    assert f"{PACKAGE}/defaults.yaml: a copy of {fault.relative_to(ROOT)}" in problems
    assert f"{PACKAGE}/helpers.py: a copy of arenac/faults.py" in problems
    assert "faults/x.txt: a spec or a fault template" in problems
    assert any("Dockerfile copies '../../../../arenac'" in p for p in problems)
    old = context_problems(ROOT / "library" / "substrates" / "spine")  # the context the image had
    assert any(p.startswith("faults/") and p.endswith("a spec or a fault template") for p in old)
    assert "profiles.arena: a spec or a fault template" in old


def test_the_entrypoint_runs_from_the_context_without_arenac(tmp_path):
    module = entrypoint_module(CONTEXT / "Dockerfile")
    assert module == PACKAGE and (CONTEXT / PACKAGE / "__main__.py").is_file()
    env = _without_arenac(tmp_path)
    helped = subprocess.run([sys.executable, "-m", module, "--help"], cwd=CONTEXT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0, helped.stderr
    assert "usage: python -m spine_services" in helped.stdout
    modules = sorted(f"{PACKAGE}.{p.stem}" for p in (CONTEXT / PACKAGE).glob("*.py") if p.stem != "__main__")
    script = (f"import importlib, {PACKAGE}; [importlib.import_module(m) for m in {modules!r}]; "
              f"print({PACKAGE}.__file__)")
    imported = subprocess.run([sys.executable, "-c", script], cwd=CONTEXT, env=env, capture_output=True, text=True,
                              timeout=120)
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()).resolve().is_relative_to(CONTEXT.resolve())
    # the blocker really refuses arenac: the same interpreter cannot import it
    refused = subprocess.run([sys.executable, "-c", "import arenac"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode != 0 and "the image has no arenac" in refused.stderr


def _third_party_imports(package: Path) -> set[str]:
    found = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != PACKAGE}


def test_the_apps_pyproject_declares_what_it_imports():
    project = tomllib.loads((CONTEXT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in project["dependencies"]}
    imported = _third_party_imports(CONTEXT / PACKAGE)
    assert imported <= set(DISTRIBUTIONS), f"map each new import to its distribution: {imported - set(DISTRIBUTIONS)}"
    assert {DISTRIBUTIONS[name] for name in imported} == declared
    assert "arenac" not in imported


@pytest.mark.parametrize("source", ["import arenac.model\n", "from arenac.substrate.spine import seed\n"])
def test_an_import_of_arenac_in_the_application_is_seen(tmp_path, source):
    package = tmp_path / PACKAGE
    shutil.copytree(CONTEXT / PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "extra.py").write_text(source)
    assert "arenac" in _third_party_imports(package)


def test_the_apps_wheel_holds_every_module(tmp_path):
    source = tmp_path / "app"
    shutil.copytree(CONTEXT, source, ignore=shutil.ignore_patterns("__pycache__", "IMAGE_RELEASE"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("spine_services-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"{PACKAGE}/{p.name}" for p in (CONTEXT / PACKAGE).glob("*.py")}
    assert expected <= names
    assert not any(name.startswith("arenac") for name in names)
