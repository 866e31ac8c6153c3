"""Determinism and identity: the same bundles give byte-identical exports, and `arenac export
harbor --check` names every file added, removed, altered or re-moded since."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from arenac.cli import main
from arenac.export.harbor import export, find_bundles
from helpers.trees import tree


def test_exporting_twice_gives_byte_identical_trees(build_dir, exported, tmp_path):
    again = tmp_path / "elsewhere" / "harbor"
    export(find_bundles([build_dir]), again, 1.0)
    assert tree(again) == tree(exported)
    export(find_bundles([build_dir]), again, 1.0)  # over an earlier export: replaced whole
    assert tree(again) == tree(exported)


def test_no_absolute_path_of_this_machine_in_an_export(build_dir, exported):
    for path, (data, _) in tree(exported).items():
        assert str(build_dir).encode() not in data and str(exported).encode() not in data, path
        assert str(Path.home()).encode() + b"/" not in data, path


def _check(*paths: Path):
    return CliRunner().invoke(main, ["export", "harbor", "--check", *map(str, paths)])


def test_check_passes_an_untouched_export(exported):
    result = _check(exported)
    assert result.exit_code == 0, result.output
    assert result.output.count("ok: ") == 49  # 48 tasks and the dataset manifest beside them


def test_check_names_an_edited_an_added_a_removed_and_a_re_moded_file(exported, sample, tmp_path):
    _, task = sample
    copy = tmp_path / task.name
    shutil.copytree(task, copy)
    (copy / "tests" / "test.sh").write_text("#!/bin/sh\necho '{\"reward\": 1}' > /logs/verifier/reward.json\n")
    (copy / "environment" / "main" / "tools" / "helper").write_text("x")
    (copy / "solution" / "solve.sh").unlink()
    (copy / "environment" / "harness" / "bundle" / "plan.json").chmod(0o600)
    result = _check(copy)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{copy.as_posix()}: altered: tests/test.sh",
        f"{copy.as_posix()}: mode changed: environment/harness/bundle/plan.json",
        f"{copy.as_posix()}: missing: solution/solve.sh",
        f"{copy.as_posix()}: not in manifest: environment/main/tools/helper"]


def test_check_names_an_edited_identity_and_dataset_manifest(exported, tmp_path):
    copy = tmp_path / "harbor"
    shutil.copytree(exported, copy)
    task = sorted(p for p in copy.iterdir() if p.is_dir())[0]
    identity = task / "arenac-export.json"
    identity.write_text(identity.read_text().replace('"time_scale": 1.0', '"time_scale": 0.5'))
    (copy / "dataset.toml").write_text((copy / "dataset.toml").read_text().replace("sha256:", "sha256:0", 1))
    result = _check(copy)
    assert result.exit_code == 1
    assert f"{task.as_posix()}: arenac-export.json itself was edited: its export digest does not match its contents" \
        in result.output
    assert f"{copy.as_posix()}: altered: dataset.toml" in result.output
