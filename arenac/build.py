"""Render and write the bundles of a compilation: build/<task>/<variant>/."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from arenac.bundle import MANIFEST, manifest_for, write_bundle
from arenac.catalog import SubstrateEntry, load_library
from arenac.model.task import Variant
from arenac.pipeline import Compilation
from arenac.render.bundle_files import EXECUTABLES, bundle_files


@dataclass(frozen=True)
class WrittenBundle:
    task: str
    variant: str
    path: Path
    files: int


def render_variant(variant: Variant, entry: SubstrateEntry, spec_text: str) -> dict[str, str | bytes]:
    files = bundle_files(variant, entry)
    files[MANIFEST] = manifest_for(files, _inputs(variant, entry, spec_text), variant.task, variant.id)
    return files


def _inputs(variant: Variant, entry: SubstrateEntry, spec_text: str) -> dict[str, bytes]:
    library = load_library()
    used = [entry.directory / "substrate.yaml", *sorted(entry.directory.glob("*.arena"))]
    used += [entry.directory / "faults" / f"{f.template.split('.', 1)[1]}.yaml" for f in variant.faults]
    inputs = {library.relative(path): _read(path) for path in used if path.is_file()}
    inputs[variant.spec.source] = spec_text.encode("utf-8")
    return inputs


@functools.lru_cache(maxsize=256)
def _read(path: Path) -> bytes:
    """Library files are read once per process (a compile run sees one library)."""
    return path.read_bytes()


def build(compilation: Compilation, out: Path) -> list[WrittenBundle]:
    library = load_library()
    written = []
    for task in compilation.tasks:
        spec = task.lowered.spec
        entry = library.substrates[spec.substrate]
        text = compilation.sources[spec.source].text
        for variant in task.expansion.variants:
            files = render_variant(variant, entry, text)
            path = out / variant.task / variant.id
            write_bundle(path, files, EXECUTABLES)
            written.append(WrittenBundle(variant.task, variant.id, path, len(files)))
    return written
