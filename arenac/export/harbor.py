"""The export of a set of bundles as Harbor tasks, and its check.

Contract:
- `find_bundles(paths)`: each path a bundle (it holds manifest.json), or a task directory or a
  build directory (`arenac compile -o`) holding bundles one or two levels down; each bundle is
  checked against its manifest and its plan read. Bad input raises `ExportError` (one line, the
  path first): not a directory, no bundle in it, a bundle failing its manifest, an unreadable
  plan, the same variant twice.
- `export(bundles, out, time_scale)` writes OUT/<variant>/ per bundle (task.py), each with its
  identity arenac-export.json, and OUT/dataset.toml (Harbor's dataset manifest of them), into a
  staging sibling renamed into place: an earlier export at OUT is replaced whole; any other
  non-empty OUT is refused. Returns (variant, bytes) per task, in variant order.
- `check(paths)`: each path an exported task or an export holding them; every file added,
  removed, altered or re-moded since the export, and an edited identity file, named in the
  wording of `arenac verify-bundle` (`BundleCheck.findings`); dataset.toml is checked against the
  tasks beside it. Returns (path, findings) per task or export checked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from arenac import __version__
from arenac.bundle import MANIFEST, manifest_digest, sha256, staged_directory, verify_bundle, write_file
from arenac.export.models import (
    DATASET_FILE,
    DATASET_HEADER,
    IDENTITY_DIGEST_KEY,
    IDENTITY_FILE,
    DatasetInfo,
    DatasetManifest,
    DatasetTask,
    ExportedFile,
    ExportIdentity,
)
from arenac.export.task import ORG, SourceBundle, write_task
from arenac.model.plan import Plan

DATASET_NAME = f"{ORG}/incidents"
# the files and directories Harbor packs into a task's content hash (its Packager): the identity
# file is arenac's own and not among them
_HARBOR_FILES = ("task.toml", "instruction.md", "README.md")
_HARBOR_DIRS = ("environment", "tests", "solution", "steps")


class ExportError(Exception):
    """A user's mistake in the input or the output: one line, the path first."""


def find_bundles(paths: list[Path]) -> list[SourceBundle]:
    bundles: list[SourceBundle] = []
    seen: dict[str, Path] = {}
    for path in paths:
        if not path.is_dir():
            raise ExportError(f"{path.as_posix()}: not a directory (a bundle, or a build directory of bundles)")
        found = [path] if (path / MANIFEST).is_file() else sorted(
            {p.parent for pattern in (f"*/{MANIFEST}", f"*/*/{MANIFEST}") for p in path.glob(pattern) if p.is_file()})
        if not found:
            raise ExportError(f"{path.as_posix()}: not a bundle and holds none (no {MANIFEST})")
        for directory in found:
            bundle = _open(directory)
            if bundle.variant in seen:
                raise ExportError(f"{directory.as_posix()}: variant {bundle.variant} is given twice "
                                  f"(also {seen[bundle.variant].as_posix()})")
            seen[bundle.variant] = directory
            bundles.append(bundle)
    return sorted(bundles, key=lambda b: b.variant)


def _open(directory: Path) -> SourceBundle:
    check = verify_bundle(directory)
    if not check.ok:
        findings = check.findings()
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise ExportError(f"{directory.as_posix()}: the bundle fails its manifest: {findings[0]}{more}")
    try:
        plan = Plan.model_validate_json((directory / "plan.json").read_bytes())
        listed = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        digest = str(listed["bundle_digest"])
        modes = {a["path"]: int(a["mode"], 8) for a in listed["artefacts"]}
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as error:
        raise ExportError(f"{directory.as_posix()}: cannot read its plan or manifest "
                          f"({error.__class__.__name__})") from None
    if not (directory / "oracle" / "solve.sh").is_file() or not (directory / "instruction.md").is_file():
        raise ExportError(f"{directory.as_posix()}: the bundle has no oracle/solve.sh or instruction.md")
    files = tuple(sorted({**modes, MANIFEST: 0o644}.items()))
    return SourceBundle(directory, plan, digest, files)


def export(bundles: list[SourceBundle], out: Path, time_scale: float) -> list[tuple[str, int]]:
    _refuse_foreign_output(out)
    sizes = []
    with staged_directory(out) as staging:
        for bundle in bundles:
            directory = staging / bundle.variant
            directory.mkdir()
            write_task(directory, bundle, time_scale)
            _write_identity(directory, bundle, time_scale)
            sizes.append((bundle.variant, sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())))
        write_file(staging / DATASET_FILE, dataset_manifest(staging, [b.variant for b in bundles]).to_toml().encode(),
                   0o644)
        staging.chmod(0o755)
    return sizes


def _refuse_foreign_output(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out.as_posix()}: the output exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not is_export(out):
        raise ExportError(f"{out.as_posix()}: the output is not empty and is not an earlier export "
                          f"(no {DATASET_FILE} written by arenac beside tasks with {IDENTITY_FILE}); "
                          f"choose another directory")


def is_export(directory: Path) -> bool:
    manifest = directory / DATASET_FILE
    if not manifest.is_file() or not manifest.read_text(encoding="utf-8", errors="replace").startswith(
            f"# {DATASET_HEADER}"):
        return False
    return all(entry == manifest or (entry.is_dir() and (entry / IDENTITY_FILE).is_file())
               for entry in directory.iterdir())


def _write_identity(directory: Path, bundle: SourceBundle, time_scale: float) -> None:
    files = tuple(ExportedFile(path=p.relative_to(directory).as_posix(), sha256=sha256(p.read_bytes()),
                               mode=f"{p.stat().st_mode & 0o777:04o}")
                  for p in sorted(directory.rglob("*"), key=lambda p: p.relative_to(directory).as_posix())
                  if p.is_file())
    identity = ExportIdentity(arenac_version=__version__, task=bundle.plan.task, variant=bundle.variant,
                              bundle_digest=bundle.bundle_digest, time_scale=float(time_scale), artefacts=files)
    digest = manifest_digest(identity.model_dump(mode="json"), IDENTITY_DIGEST_KEY)
    write_file(directory / IDENTITY_FILE,
               identity.model_copy(update={IDENTITY_DIGEST_KEY: digest}).to_json().encode("utf-8"), 0o644)


def harbor_content_hash(task_dir: Path) -> str:
    """Harbor's content hash of a task (its Packager): sha256 over `PATH\\0SHA256\\n` of the files it
    publishes (task.toml, instruction.md, README.md, and everything under environment/, tests/,
    solution/, steps/), sorted by path. An export has no .harborignore or .gitignore to honour."""
    files = [task_dir / name for name in _HARBOR_FILES if (task_dir / name).is_file()]
    files += [p for name in _HARBOR_DIRS if (task_dir / name).is_dir() for p in (task_dir / name).rglob("*")
              if p.is_file()]
    outer = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(task_dir).as_posix()):
        outer.update(f"{path.relative_to(task_dir).as_posix()}\0{sha256(path.read_bytes())}\n".encode())
    return outer.hexdigest()


def dataset_manifest(root: Path, variants: list[str]) -> DatasetManifest:
    tasks = sorted({_identity_task(root / v) for v in variants})
    return DatasetManifest(
        dataset=DatasetInfo(name=DATASET_NAME,
                            description=f"{len(variants)} variant(s) of {len(tasks)} arenac incident task(s): "
                                        + ", ".join(tasks),
                            keywords=("arenac", "incident", "sre")),
        tasks=tuple(DatasetTask(name=f"{ORG}/{v}", digest=f"sha256:{harbor_content_hash(root / v)}")
                    for v in sorted(variants)),
    )


def _identity_task(directory: Path) -> str:
    try:
        return str(json.loads((directory / IDENTITY_FILE).read_text(encoding="utf-8"))["task"])
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


@dataclass(frozen=True)
class Checked:
    path: Path
    findings: tuple[str, ...]


def check(paths: list[Path]) -> list[Checked]:
    results: list[Checked] = []
    for path in paths:
        if (path / IDENTITY_FILE).is_file():
            results.append(_check_task(path))
            continue
        tasks = sorted(p.parent for p in path.glob(f"*/{IDENTITY_FILE}")) if path.is_dir() else []
        if not tasks:
            raise ExportError(f"{path.as_posix()}: not an exported task and holds none (no {IDENTITY_FILE})")
        results += [_check_task(task) for task in tasks]
        results.append(Checked(path, tuple(_check_dataset(path, tasks))))
    return results


def _check_task(directory: Path) -> Checked:
    return Checked(directory, tuple(verify_bundle(directory, IDENTITY_FILE, IDENTITY_DIGEST_KEY).findings()))


def _check_dataset(root: Path, tasks: list[Path]) -> list[str]:
    manifest = root / DATASET_FILE
    if not manifest.is_file():
        return [f"missing: {DATASET_FILE}"]
    findings = [f"not in manifest: {entry.name}" for entry in sorted(root.iterdir())
                if entry != manifest and entry not in tasks]
    expected = dataset_manifest(root, [t.name for t in tasks]).to_toml()
    if manifest.read_text(encoding="utf-8", errors="replace") != expected:
        findings.append(f"altered: {DATASET_FILE} (it does not list these tasks with their content hashes)")
    return findings
