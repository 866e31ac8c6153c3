"""Write bundles and their manifests; check a bundle against its manifest, and say how it differs.

manifest.json lists the inputs (the spec and every library file the variant drew on)
and every artefact with its sha256 and file mode, sorted by path, plus the arenac version
and a bundle digest over all of that (everything in the manifest but the digest itself), so
an edit to the manifest is caught as well as an edit to a file. A bundle is written to a
temporary sibling directory and renamed into place, so a reader never sees half a bundle.

`BundleCheck.findings()` is the one wording of a check's result (`altered: PATH`, `mode changed:
PATH`, ...): `arenac verify-bundle` prints it a line each, the runner joins it into the refusal of
a bundle it will not run (arenac/runner/bundle.py), so both name the same differences.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from arenac import __version__
from arenac.core.serialize import dump_json

MANIFEST = "manifest.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def file_mode(path: str, executables: frozenset[str]) -> str:
    return "0755" if path in executables else "0644"


def manifest_for(files: dict[str, str | bytes], inputs: dict[str, bytes], task: str, variant: str,
                 executables: frozenset[str]) -> str:
    manifest = {
        "arenac_version": __version__,
        "task": task,
        "variant": variant,
        "inputs": [{"path": p, "sha256": sha256(inputs[p])} for p in sorted(inputs)],
        "artefacts": [{"path": p, "sha256": sha256(_bytes(files[p])), "mode": file_mode(p, executables)}
                      for p in sorted(files)],
    }
    return dump_json({**manifest, "bundle_digest": bundle_digest(manifest)})


def bundle_digest(manifest: dict) -> str:
    """sha256 of the canonical JSON of the manifest without its `bundle_digest` field."""
    return manifest_digest(manifest, "bundle_digest")


def manifest_digest(manifest: dict, digest_key: str) -> str:
    """sha256 of the canonical JSON of a manifest without its own digest field `digest_key` (a
    bundle's manifest.json: `bundle_digest`; another tree's manifest of the same shape names its own)."""
    return sha256(dump_json({k: v for k, v in manifest.items() if k != digest_key}).encode("utf-8"))


def write_bundle(directory: Path, files: dict[str, str | bytes], executables: frozenset[str]) -> None:
    with staged_directory(directory) as staging:
        made: set[Path] = {staging}
        for relative in sorted(files):
            target = staging / relative
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            write_file(target, _bytes(files[relative]), int(file_mode(relative, executables), 8))


@contextmanager
def staged_directory(directory: Path) -> Iterator[Path]:
    """A temporary sibling of `directory` to write into; when the block ends without an error it
    replaces `directory` whole (renamed into place), else it is removed. A reader never sees half."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        yield staging
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_file(path: Path, data: bytes, mode: int) -> None:
    """A new file with exactly `mode`: set explicitly, not left to the umask, so that trees written
    from the same inputs are identical everywhere."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class BundleCheck:
    altered: tuple[str, ...]
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]
    mode_changed: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.altered or self.missing or self.unexpected or self.mode_changed or self.problem)

    def findings(self) -> list[str]:
        """Every way the bundle differs from its manifest, one line each: the manifest's own problem
        first, then `KIND: PATH` by kind (altered, mode changed, missing, not in manifest), paths sorted
        within a kind. Empty exactly when the bundle is `ok`."""
        kinds = (("altered", self.altered), ("mode changed", self.mode_changed), ("missing", self.missing),
                 ("not in manifest", self.unexpected))
        return ([self.problem] if self.problem else []) + [f"{kind}: {path}" for kind, paths in kinds for path in paths]


def verify_bundle(directory: Path, manifest_name: str = MANIFEST, digest_key: str = "bundle_digest") -> BundleCheck:
    """Check `directory` against its manifest. A tree other than a bundle that lists its files the
    same way (`artefacts`: path, sha256, mode; a digest over the rest under `digest_key`) names its
    own manifest file and digest field: an exported Harbor task's arenac-export.json is one."""
    try:
        manifest = json.loads((directory / manifest_name).read_text(encoding="utf-8"))
        listed = {a["path"]: a["sha256"] for a in manifest["artefacts"]}
        modes = {a["path"]: a.get("mode") for a in manifest["artefacts"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        return BundleCheck((), (), (), problem=f"no readable {manifest_name} in {directory} "
                                                f"({error.__class__.__name__})")
    present = {
        p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()
    } - {manifest_name}
    kept = sorted(p for p in listed if p in present)
    altered = tuple(p for p in kept if sha256((directory / p).read_bytes()) != listed[p])
    mode_changed = tuple(p for p in kept if modes[p] is not None and _mode(directory / p) != modes[p])
    missing = tuple(sorted(p for p in listed if p not in present))
    unexpected = tuple(sorted(present - set(listed)))
    problem = None if manifest_digest(manifest, digest_key) == manifest.get(digest_key) else (
        f"{manifest_name} itself was edited: its {digest_key.replace('_', ' ')} does not match its contents")
    return BundleCheck(altered, missing, unexpected, mode_changed, problem)


def _mode(path: Path) -> str:
    return f"{path.stat().st_mode & 0o777:04o}"
