"""`arenac export harbor` as a user meets it: its output, and one line with the path for every
mistake in its input or output, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys

from click.testing import CliRunner

from arenac.cli import main


def _export(*args: str):
    return CliRunner().invoke(main, ["export", "harbor", *args])


def test_the_export_prints_each_task_with_its_size_and_a_total(build_dir, tmp_path):
    out = tmp_path / "harbor"
    result = _export(str(build_dir / "revoked-grant"), "-o", str(out))
    assert result.exit_code == 0, result.output
    *lines, total = result.output.splitlines()
    assert len(lines) == len([p for p in (build_dir / "revoked-grant").iterdir()])
    sizes = []
    for line in lines:
        variant, size, unit = line.split()
        assert unit == "bytes" and variant.startswith("revoked-grant-")
        assert int(size) == sum(p.stat().st_size for p in (out / variant).rglob("*") if p.is_file())
        sizes.append(int(size))
    assert total == f"{len(lines)} task(s), {sum(sizes)} bytes -> {out.as_posix()}/"
    assert sorted(p.name for p in out.iterdir()) == sorted(["dataset.toml", *(line.split()[0] for line in lines)])


def _refused(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a one-line refusal, not a traceback
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and all(w in line for w in words), line


def test_bad_inputs_are_refused_in_one_line(build_dir, sample, tmp_path):
    bundle, _ = sample
    out = str(tmp_path / "out")
    _refused(_export(str(tmp_path / "nothing"), "-o", out), "nothing", "not a directory")
    (tmp_path / "empty").mkdir()
    _refused(_export(str(tmp_path / "empty"), "-o", out), "empty", "not a bundle and holds none")
    edited = tmp_path / "edited"
    shutil.copytree(bundle, edited)
    (edited / "plan.json").write_text("{}")
    _refused(_export(str(edited), "-o", out), "edited", "fails its manifest", "altered: plan.json")
    _refused(_export(str(bundle), str(bundle), "-o", out), "given twice")
    _refused(_export(str(bundle)), "missing -o")
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_not_an_export_is_left_alone(sample, tmp_path):
    bundle, _ = sample
    foreign = tmp_path / "work"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    _refused(_export(str(bundle), "-o", str(foreign)), "work", "not empty and is not an earlier export")
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    _refused(_export(str(bundle), "-o", str(tmp_path / "file")), "file", "not a directory")


def test_check_refuses_what_is_no_export(sample, tmp_path):
    bundle, _ = sample
    _refused(_export("--check", str(bundle)), "not an exported task and holds none")
    _refused(_export("--check", str(tmp_path), "-o", str(tmp_path)), "--check")


def test_the_cli_imports_the_export_only_when_it_runs():
    code = ("import sys; from arenac.cli import main; from click.testing import CliRunner; "
            "CliRunner().invoke(main, ['export', '--help']); "
            "print(any(m.startswith('arenac.export') for m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
