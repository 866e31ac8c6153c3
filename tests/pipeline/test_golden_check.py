"""The golden check itself, on both sides: the golden trees hold no copy of the substrate's chart,
yet a compiled bundle that differs from the golden one anywhere, chart files included, is caught;
and a golden bundle made whole again is a real bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arenac.bundle import verify_bundle
from helpers.golden import (
    complete_variant,
    golden_bundle,
    golden_cases,
    golden_differences,
    library_chart_file,
    vendored_files,
)

MINIMAL = next(case for case in golden_cases() if case.name == "minimal")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    """The minimal case, freshly compiled: OUT/<task>/<variant>/."""
    out = tmp_path_factory.mktemp("golden")
    golden_bundle(MINIMAL, out)
    return out


@pytest.fixture
def fresh(compiled, tmp_path) -> tuple[Path, str]:
    """A copy of the compiled case to spoil, and its one bundle's path inside it."""
    copy = tmp_path / "out"
    shutil.copytree(compiled, copy)
    (manifest,) = copy.glob("*/*/manifest.json")
    return copy, manifest.parent.relative_to(copy).as_posix()


def test_the_golden_trees_hold_no_chart_copies_but_the_compiler_writes_them(compiled):
    for case in golden_cases():
        assert vendored_files(case / "expected") == [], case.name
    written = vendored_files(compiled)
    assert len(written) >= 10 and all("/chart/charts/spine/" in path for path in written)
    assert golden_differences(compiled, MINIMAL / "expected") == []


def test_only_a_byte_copy_of_the_library_chart_counts_as_vendored(fresh):
    out, bundle = fresh
    values = out / bundle / "chart" / "charts" / "spine" / "values.yaml"
    assert library_chart_file("chart/charts/spine/values.yaml") is not None
    assert f"{bundle}/chart/charts/spine/values.yaml" in vendored_files(out)
    values.write_text(values.read_text() + "# rendered, not copied\n")
    assert f"{bundle}/chart/charts/spine/values.yaml" not in vendored_files(out)
    assert library_chart_file("chart/templates/grader.yaml") is None  # the compiler's own template


def test_a_changed_chart_file_is_caught_by_the_golden_manifests_digest(fresh):
    out, bundle = fresh
    (out / bundle / "chart" / "charts" / "spine" / "files" / "seed.sql").write_text("-- no seed\n")
    assert golden_differences(out, MINIMAL / "expected") == [
        f"differs from the digest the golden manifest pins: {bundle}/chart/charts/spine/files/seed.sql"]


def test_a_chart_file_of_another_mode_is_caught(fresh):
    out, bundle = fresh
    (out / bundle / "chart" / "charts" / "spine" / "Chart.yaml").chmod(0o755)
    assert golden_differences(out, MINIMAL / "expected") == [
        f"differs from the digest the golden manifest pins: {bundle}/chart/charts/spine/Chart.yaml"]


def test_a_chart_file_no_longer_written_is_caught(fresh):
    out, bundle = fresh
    (out / bundle / "chart" / "charts" / "spine" / "templates" / "redis.yaml").unlink()
    assert golden_differences(out, MINIMAL / "expected") == [
        f"missing, though the golden manifest pins it: {bundle}/chart/charts/spine/templates/redis.yaml"]


def test_other_files_are_compared_byte_for_byte(fresh):
    out, bundle = fresh
    (out / bundle / "oracle" / "solve.sh").write_text("echo pwned\n")
    (out / bundle / "rbac" / "role.yaml").unlink()
    (out / bundle / "extra.txt").write_text("x")
    (out / bundle / "chart" / "charts" / "spine" / "unknown.yaml").write_text("x")
    assert golden_differences(out, MINIMAL / "expected") == [
        f"missing: {bundle}/rbac/role.yaml",
        f"differs from the golden file: {bundle}/oracle/solve.sh",
        f"not in the golden tree: {bundle}/chart/charts/spine/unknown.yaml",
        f"not in the golden tree: {bundle}/extra.txt",
    ]


def test_a_completed_golden_variant_is_the_compiled_bundle(compiled):
    bundle = complete_variant("minimal")
    check = verify_bundle(bundle)
    assert check.ok, check
    (written,) = compiled.glob("*/*/manifest.json")
    assert bundle.name == written.parent.name
    assert golden_differences(bundle.parent.parent, compiled) == []
