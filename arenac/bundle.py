"""Write bundles and their manifests; check a bundle against its manifest.

manifest.json lists the inputs (the spec and every library file the variant drew on)
and every artefact with its sha256, sorted by path, plus the arenac version and a
bundle digest over the artefact list. A bundle is written to a temporary sibling
directory and renamed into place, so a reader never sees half a bundle.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from arenac import __version__
from arenac.serialize import dump_json

MANIFEST = "manifest.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def manifest_for(files: dict[str, str | bytes], inputs: dict[str, bytes], task: str, variant: str) -> str:
    artefacts = [{"path": p, "sha256": sha256(_bytes(files[p]))} for p in sorted(files)]
    digest = sha256("".join(f"{a['sha256']}  {a['path']}\n" for a in artefacts).encode())
    return dump_json({
        "arenac_version": __version__,
        "task": task,
        "variant": variant,
        "inputs": [{"path": p, "sha256": sha256(inputs[p])} for p in sorted(inputs)],
        "artefacts": artefacts,
        "bundle_digest": digest,
    })


def write_bundle(directory: Path, files: dict[str, str | bytes], executables: frozenset[str]) -> None:
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        made: set[Path] = {staging}
        for relative in sorted(files):
            target = staging / relative
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            # modes are set explicitly (not left to the umask) so that bundles are identical everywhere
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.fchmod(fd, 0o755 if relative in executables else 0o644)
                os.write(fd, _bytes(files[relative]))
            finally:
                os.close(fd)
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@dataclass(frozen=True)
class BundleCheck:
    altered: tuple[str, ...]
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.altered or self.missing or self.unexpected or self.problem)


def verify_bundle(directory: Path) -> BundleCheck:
    import json

    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        listed = {a["path"]: a["sha256"] for a in manifest["artefacts"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        return BundleCheck((), (), (), f"no readable manifest.json in {directory} ({error.__class__.__name__})")
    present = {
        p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()
    } - {MANIFEST}
    altered = tuple(sorted(p for p in listed if p in present and sha256((directory / p).read_bytes()) != listed[p]))
    missing = tuple(sorted(p for p in listed if p not in present))
    unexpected = tuple(sorted(present - set(listed)))
    digest = sha256("".join(f"{listed[p]}  {p}\n" for p in sorted(listed)).encode())
    problem = None if digest == manifest.get("bundle_digest") else "the manifest's bundle digest does not match its artefact list"
    return BundleCheck(altered, missing, unexpected, problem)
