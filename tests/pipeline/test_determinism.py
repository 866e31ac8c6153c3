"""Bundles are byte-identical across runs and hash seeds, and portable."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from arenac.pipeline import compile_paths, write_bundles
from helpers import ROOT, task_paths
from helpers.trees import tree


def test_compiling_twice_gives_identical_trees(tmp_path):
    write_bundles(compile_paths(task_paths()), tmp_path / "a")
    write_bundles(compile_paths(task_paths()), tmp_path / "b")
    first, second = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert first and first == second


def test_hash_seed_does_not_change_output(tmp_path):
    for seed in ("0", "1"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-m", "arenac.cli", "compile", "tasks", "-o", str(tmp_path / seed)],
                       cwd=ROOT, env=env, check=True, capture_output=True)
    first = tree(tmp_path / "0")
    assert len(first) > 20 and first == tree(tmp_path / "1")


def test_the_same_spec_compiled_from_anywhere_gives_the_same_bundle(tmp_path):
    """The manifest names the spec by its file name: neither the working directory nor an
    absolute path reaches an artefact."""
    spec = ROOT / "tasks" / "revoked-grant.arena"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = {"root": (ROOT, "tasks/revoked-grant.arena"), "absolute": (elsewhere, str(spec))}
    for name, (cwd, argument) in runs.items():
        subprocess.run([sys.executable, "-m", "arenac.cli", "compile", argument, "-o", str(tmp_path / name)],
                       cwd=cwd, check=True, capture_output=True)
    first = tree(tmp_path / "root")
    assert first and first == tree(tmp_path / "absolute")
    assert not any(str(ROOT).encode() in data for data, _ in first.values())


def test_no_absolute_paths_or_timestamps(tmp_path):
    out = tmp_path / "build"
    write_bundles(compile_paths(task_paths()), out)
    forbidden = [str(tmp_path), str(ROOT), "/root/", "/home/", "/tmp/"]
    timestamp = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
    for path, (data, _) in tree(out).items():
        for needle in forbidden:
            assert needle.encode() not in data, f"{path} contains {needle}"
        # vendored substrate files are byte copies of the library (its seed data carries fixed dates)
        if "/chart/charts/" not in f"/{path}":
            assert not timestamp.search(data), f"{path} contains a timestamp"


def test_libyaml_and_pure_python_emitters_agree(tmp_path):
    """Bundles use libyaml when present; a machine without it must write the same bytes."""
    import yaml

    from arenac.core.serialize import dump_yaml

    write_bundles(compile_paths(task_paths()), tmp_path)
    documents = [yaml.safe_load(p.read_text()) for p in sorted(tmp_path.rglob("*.yaml"))
                 if "/templates/" not in p.as_posix()]
    assert len(documents) > 20
    for document in documents:
        assert dump_yaml(document, yaml.SafeDumper) == dump_yaml(document)
