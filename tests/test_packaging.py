"""The wheel ships everything the editable install reads: an installed arenac writes the same
bundles as a checkout (the library's dot-files included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers import ROOT

SHIPPED = {"library": "arenac/library", "grammar": "arenac/grammar", "arenac/templates": "arenac/templates",
           "arenac/report/templates": "arenac/report/templates",
           "library/substrates/spine/app/spine_services": "spine_services"}
# the spine application's build context: its package ships as spine_services (above), its image
# files (Dockerfile, pyproject.toml) not at all
APP = "substrates/spine/app/"


def _files(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_the_wheel_holds_every_library_grammar_and_template_file(tmp_path):
    source = tmp_path / "src"  # a copy: building in the checkout would write into its build/
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("arenac", "grammar", "library"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("arenac-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for tree, packaged in SHIPPED.items():
        missing = sorted(f for f in _files(ROOT / tree)
                         if f"{packaged}/{f}" not in names and not (tree == "library" and f.startswith(APP)))
        assert not missing, f"not in the wheel: {missing}"
    assert not [name for name in names if name.startswith(f"arenac/library/{APP}")]
    assert "arenac/library/substrates/spine/chart/.helmignore" in names

