"""The golden cases (tests/golden/<case>/): a spec, the bundles it compiles to, and what two of the
pipeline's stages made of it.

A case holds `spec.arena`, `ir.json` and `matrix.json` (`arenac.stage_dumps`: the lowered
task and the variant matrix) and `expected/<task>/<variant>/`, each variant's bundle without the
files the compiler copies verbatim from the substrate's chart (`chart/charts/<substrate>/...`, byte
copies of library/substrates/<substrate>/chart/): the golden manifest.json pins those by digest.

- `refresh_case(case)` rewrites a case's pinned files from the current compiler.
- `golden_differences(actual, expected)` compares a fresh compilation with the golden tree: every
  file byte for byte and mode for mode, the vendored chart files against the golden manifest.
- `complete_variant(case)` gives the path of a case's golden bundle with its vendored files put
  back, for the tests that run or open a real bundle.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from helpers import ROOT
from helpers.trees import tree

GOLDEN = ROOT / "tests" / "golden"
STAGES = ("ir.json", "matrix.json")
VENDORED = "chart/charts/"  # in a bundle: the substrate's chart, as the compiler copies it


def golden_cases() -> list[Path]:
    """Every golden case directory (one holding a spec.arena), sorted."""
    return sorted(p for p in GOLDEN.iterdir() if (p / "spec.arena").is_file())


def golden_bundle(case: Path, out: Path) -> None:
    """Compile the case's spec as `arenac compile` would, into OUT/<task>/<variant>/."""
    from arenac.pipeline import compile_paths, write_bundles

    write_bundles(compile_paths([_spec_name(case)]), out)


def stage_files(case: Path) -> dict[str, str]:
    """The case's `ir.json` and `matrix.json` as the current compiler writes them."""
    from arenac.pipeline import compile_paths
    from arenac.stage_dumps import stage_dumps

    return stage_dumps(compile_paths([_spec_name(case)]))


def refresh_case(case: Path) -> None:
    """Rewrite the case's expected/ tree (without the vendored chart files) and its stage dumps."""
    expected = case / "expected"
    shutil.rmtree(expected, ignore_errors=True)
    golden_bundle(case, expected)
    for path in vendored_files(expected):
        (expected / path).unlink()
    for directory in sorted(expected.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
    for name, text in stage_files(case).items():
        (case / name).write_text(text, encoding="utf-8")


def library_chart_file(bundle_path: str) -> Path | None:
    """The substrate chart file a bundle's `chart/charts/<substrate>/<rest>` copies, if one exists."""
    from arenac.lower.library import library_root

    if not bundle_path.startswith(VENDORED) or bundle_path.count("/") < 3:
        return None
    substrate, rest = bundle_path.removeprefix(VENDORED).split("/", 1)
    source = library_root() / "substrates" / substrate / "chart" / rest
    return source if source.is_file() else None


def vendored_files(root: Path) -> list[str]:
    """The files under ROOT (a tree of bundles) that are byte copies of their substrate's chart
    files; a chart file the compiler rendered (its bytes differ) is not one."""
    found = []
    for path, (data, _) in tree(root).items():
        variant_path = path.split("/", 2)[2] if path.count("/") >= 2 else ""
        source = library_chart_file(variant_path)
        if source is not None and source.read_bytes() == data:
            found.append(path)
    return found


def golden_differences(actual: Path, expected: Path) -> list[str]:
    """How ACTUAL (a fresh OUT/<task>/<variant>/ tree) differs from a golden EXPECTED tree; empty
    when they are the same bundles. A file only ACTUAL holds must be a vendored chart file that the
    golden manifest of its bundle pins with the same digest and mode."""
    ours, theirs = tree(actual), tree(expected)
    problems = [f"missing: {path}" for path in sorted(set(theirs) - set(ours))]
    problems += [f"differs from the golden file: {path}" for path in sorted(set(ours) & set(theirs))
                 if ours[path] != theirs[path]]
    for path in sorted(set(ours) - set(theirs)):
        problem = _unpinned(path, ours[path], theirs)
        if problem:
            problems.append(f"{problem}: {path}")
    for manifest in sorted(p for p in theirs if p.count("/") == 2 and p.endswith("/manifest.json")):
        bundle = manifest.removesuffix("manifest.json")
        problems += [f"missing, though the golden manifest pins it: {bundle}{a['path']}"
                     for a in json.loads(theirs[manifest][0])["artefacts"]
                     if f"{bundle}{a['path']}" not in ours and f"{bundle}{a['path']}" not in theirs]
    return problems


def _unpinned(path: str, file: tuple[bytes, int], golden: dict[str, tuple[bytes, int]]) -> str | None:
    """Why a file that the golden tree does not hold is not proven by it, or None if it is."""
    task, variant, inside = (path.split("/", 2) + ["", ""])[:3]
    if library_chart_file(inside) is None:
        return "not in the golden tree"
    manifest = golden.get(f"{task}/{variant}/manifest.json")
    if manifest is None:
        return "in no golden bundle"
    pins = {a["path"]: a for a in json.loads(manifest[0])["artefacts"]}
    pin = pins.get(inside)
    if pin is None:
        return "not pinned by the golden manifest"
    data, mode = file
    if pin["sha256"] != hashlib.sha256(data).hexdigest() or pin["mode"] != f"{mode:04o}":
        return "differs from the digest the golden manifest pins"
    return None


@functools.cache
def complete_variant(case: str) -> Path:
    """The case's one golden bundle with its vendored chart files restored from the library and
    checked against the golden manifest: a real bundle that `open_bundle` accepts. It lives in a
    scratch directory removed when the process exits; callers copy it before changing it."""
    (golden,) = (GOLDEN / case / "expected").glob("*/*/manifest.json")
    bundle = Path(_scratch().name) / case / golden.parent.relative_to(GOLDEN / case / "expected")
    shutil.copytree(golden.parent, bundle)
    for pin in json.loads(golden.read_text(encoding="utf-8"))["artefacts"]:
        target = bundle / pin["path"]
        source = library_chart_file(pin["path"]) if not target.exists() else None
        if source is None:
            continue
        data = source.read_bytes()
        if hashlib.sha256(data).hexdigest() != pin["sha256"]:
            raise AssertionError(f"{source} changed since the golden {case} was refreshed (tests/refresh.py)")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(int(pin["mode"], 8))
    return bundle


@functools.cache
def _scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="arenac-golden-")


def _spec_name(case: Path) -> str:
    """The case's spec as a user at the repository root names it (the tests run there)."""
    return (case / "spec.arena").relative_to(ROOT).as_posix()
