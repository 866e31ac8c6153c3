"""Render and write the bundles of a compilation: build/<task>/<variant>/.

Variants are rebuilt from their checked specs and rendered one at a time, so memory does not
grow with the matrix. Bundles of a task that are no longer in its matrix (an edit changed their
content, hence their id) are removed, so `OUT/<task>/` always holds exactly the task's variants;
only directories that carry an arenac manifest for that task are ever removed.
"""

from __future__ import annotations

import functools
import json
import shutil
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
    files[MANIFEST] = manifest_for(files, _inputs(variant, entry, spec_text), variant.task, variant.id, EXECUTABLES)
    return files


def spec_input_path(source: str) -> str:
    """How the manifest names the spec: by its file name only, so that the same spec compiled
    from any directory gives the same manifest (and no absolute path reaches an artefact)."""
    return "spec/" + Path(source).name


def _inputs(variant: Variant, entry: SubstrateEntry, spec_text: str) -> dict[str, bytes]:
    library = load_library()
    used = [entry.directory / "substrate.yaml", *sorted(entry.directory.glob("*.arena"))]
    used += [entry.directory / "faults" / f"{f.template.split('.', 1)[1]}.yaml" for f in variant.faults]
    inputs = {library.relative(path): _read(path) for path in used if path.is_file()}
    inputs[spec_input_path(variant.spec.source)] = spec_text.encode("utf-8")
    return inputs


@functools.lru_cache(maxsize=256)
def _read(path: Path) -> bytes:
    """Library files are read once per process (a compile run sees one library)."""
    return path.read_bytes()


def build(compilation: Compilation, out: Path) -> list[WrittenBundle]:
    """Write every variant's bundle; raises OSError when the output cannot be written."""
    from arenac.variants import built

    library = load_library()
    written = []
    for task in compilation.tasks:
        spec = task.lowered.spec
        entry = library.substrates[spec.substrate]
        text = compilation.sources[spec.source].text
        for variant in built(spec, library):
            files = render_variant(variant, entry, text)
            path = out / variant.task / variant.id
            write_bundle(path, files, EXECUTABLES)
            written.append(WrittenBundle(variant.task, variant.id, path, len(files)))
        remove_stale(out / spec.name, spec.name, {cell.id for cell in task.variants})
    return written


def remove_stale(task_dir: Path, task: str, current: set[str]) -> list[str]:
    """Remove bundles of `task` under `task_dir` whose variant is no longer in the matrix."""
    removed = []
    for candidate in sorted(task_dir.iterdir()) if task_dir.is_dir() else []:
        if candidate.name in current or not candidate.is_dir() or candidate.is_symlink():
            continue
        try:
            manifest = json.loads((candidate / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not a bundle of ours: leave it alone
        if isinstance(manifest, dict) and manifest.get("task") == task and manifest.get("variant") == candidate.name:
            shutil.rmtree(candidate)
            removed.append(candidate.name)
    return removed
