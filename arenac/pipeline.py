"""The compiler pipeline: the whole compile as named steps, each with a typed input and output.

    read     paths                              -> dict[str, SourceFile]      read_sources
    parse    sources                            -> list[ast.Module]           parse_sources
    lower    modules, library                   -> list[LoweredTask]          lower_modules
    check    lowered tasks                      -> nothing (diagnostics)      check_tasks
    expand   lowered tasks, library             -> list[CompiledTask]         expand_tasks
    render   a compiled task, library, its text -> Iterator[RenderedBundle]   render_task
    write    a compilation, output directory    -> list[WrittenBundle]        write_bundles

`compile_paths` (read to expand) is `arenac check`; `write_bundles` (render and write) then
makes `arenac compile`'s build/<task>/<variant>/ (`arenac.stage_dumps` shows what lower and expand
made: the goldens pin it beside each golden bundle). Each step collects every diagnostic it finds;
the pipeline stops after the first step that found any and raises them together, in one
DiagnosticError that carries every source (specs and library), so positions show their line.

Variants are rebuilt from their checked specs and rendered one at a time, so memory does not
grow with the matrix. Bundles of a task that are no longer in its matrix (an edit changed their
content, hence their id) are removed, so `OUT/<task>/` always holds exactly the task's variants;
only directories that carry an arenac manifest for that task are ever removed.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arenac.bundle import MANIFEST, manifest_for, write_bundle
from arenac.checks.blind_restart import blind_restart_warning
from arenac.checks.queue_persistence import unkept_queue_warnings
from arenac.checks.voids import VoidCheck
from arenac.core.diagnostics import Collector, Diagnostic, DiagnosticError, merge_repeats
from arenac.core.source import SourceFile, Span
from arenac.lower import library as library_files
from arenac.lower.task import lower_task
from arenac.model.task import PrunedCell, VariantCell, cell_words
from arenac.syntax.parser import parse
from arenac.validate import check_matrix, check_task, check_variant
from arenac.variants import built, cells

if TYPE_CHECKING:
    from arenac.lower.library import LibraryMacros
    from arenac.lower.task import LoweredTask
    from arenac.model.library import Library
    from arenac.model.task import Variant
    from arenac.syntax import ast


@dataclass(frozen=True)
class CompiledTask:
    """A checked task and its matrix as listed: built cells and pruned ones. The variants
    themselves are rebuilt one at a time when rendered (`arenac.variants.built`)."""

    lowered: LoweredTask
    variants: tuple[VariantCell, ...]
    pruned: tuple[PrunedCell, ...]
    warnings: tuple[Diagnostic, ...] = ()  # of a task free of errors only (E0522, E0528: checks/)


@dataclass(frozen=True)
class Compilation:
    """Every checked task of a run, with the library it was compiled against and every source
    (specs and library modules) by display name."""

    sources: dict[str, SourceFile]
    tasks: list[CompiledTask]
    library: Library


@dataclass(frozen=True)
class RenderedBundle:
    """One variant's bundle in memory, manifest included: `{relative path: text or bytes}`."""

    task: str
    variant: str
    files: dict[str, str | bytes]


@dataclass(frozen=True)
class WrittenBundle:
    task: str
    variant: str
    path: Path
    files: int


# ---- the whole compile ---------------------------------------------------------------------


def compile_paths(paths: list[str]) -> Compilation:
    return compile_sources(read_sources(paths))


def compile_sources(sources: dict[str, SourceFile]) -> Compilation:
    """Parse, lower, check and expand the specs; raises DiagnosticError at the first step that
    found any problem (a broken library, before anything else, without source lines)."""
    library, macros = library_files.load_library(), library_files.library_macros()
    shown = {**sources, **library.sources}
    modules = parse_sources(sources, shown)
    lowered = lower_modules(modules, library, macros, shown)
    check_tasks(lowered, shown)
    voids = VoidCheck(library, modules)
    return Compilation(sources=shown, tasks=expand_tasks(lowered, library, shown, voids), library=library)


def write_bundles(compilation: Compilation, out: Path) -> list[WrittenBundle]:
    """Render and write every variant's bundle under OUT/<task>/<variant>/, and remove the
    task's stale bundles; raises OSError when the output cannot be written."""
    from arenac.render.bundle_files import EXECUTABLES  # lazily, like render_variant's import

    written = []
    for task in compilation.tasks:
        spec = task.lowered.spec
        for bundle in render_task(task, compilation.library, compilation.sources[spec.source].text):
            path = out / bundle.task / bundle.variant
            write_bundle(path, bundle.files, EXECUTABLES)
            written.append(WrittenBundle(bundle.task, bundle.variant, path, len(bundle.files)))
        remove_stale(out / spec.name, spec.name, {cell.id for cell in task.variants})
    return written


# ---- read ------------------------------------------------------------------------------------


def read_sources(paths: list[str]) -> dict[str, SourceFile]:
    """The text of every spec the paths name, by display name.

    Every problem of the whole run is raised together in one DiagnosticError: missing paths
    (E0602), directories without specs (E0604), files that cannot be read or are not UTF-8
    (E0603, at the first invalid byte), and spec files that define no task (E0605, at 1:1).
    The error carries `sources` (what could be read) so that positions show their line.
    """
    found, problems = _discover(paths)
    sources: dict[str, SourceFile] = {}
    shown: dict[str, SourceFile] = {}
    for path in found:
        name = _display_name(path)
        source, problem = _read(path, name)
        if source is not None:
            shown[name] = source
        if problem is None and source is not None:  # _read gives the text, or why it cannot
            if not _is_library_file(path) and _defines_no_task(source):
                problem = Diagnostic("E0605", "the file defines no task", Span.point(name, 1, 1),
                                     "a spec file holds at least one `task NAME { ... }`")
            else:
                sources[name] = source
        if problem is not None:
            problems.append(problem)
    if problems:
        raise DiagnosticError(problems, sources=shown)
    return sources


def _discover(paths: list[str]) -> tuple[list[Path], list[Diagnostic]]:
    """The spec files the paths name, and a diagnostic for each path that names none."""
    found: list[Path] = []
    problems: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            specs = sorted(p for p in path.rglob("*.arena") if p.is_file())
            if not specs:
                problems.append(Diagnostic("E0604", f"no .arena file under directory {raw}",
                                           hint="name spec files, or a directory that holds some"))
            found.extend(specs)
        elif path.is_file():
            found.append(path)
        else:
            problems.append(Diagnostic("E0602", f"no such file or directory: {raw}"))
    return _once_each(found), problems


def _once_each(paths: list[Path]) -> list[Path]:
    """The paths in order, a file named twice (`tasks tasks/x.arena`) kept at its first place."""
    seen: set[Path] = set()
    unique = []
    for path in paths:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            unique.append(path)
    return unique


def _read(path: Path, name: str) -> tuple[SourceFile | None, Diagnostic | None]:
    """A file's text, or why it cannot be had (E0603).

    A file that is not UTF-8 is reported at its first invalid byte; its text is still
    returned, decoded with replacement characters, so the diagnostic can show the line.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        return None, Diagnostic("E0603", f"cannot read {name}: {(error.strerror or str(error)).lower()}")
    try:
        return SourceFile(name, data.decode("utf-8")), None
    except UnicodeDecodeError as error:
        before = data[: error.start].decode("utf-8", errors="replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        problem = Diagnostic("E0603", f"cannot read {name}: byte 0x{data[error.start]:02x} is not valid UTF-8",
                             Span.point(name, line, column), "save the file as UTF-8")
        return SourceFile(name, data.decode("utf-8", errors="replace")), problem


def _defines_no_task(source: SourceFile) -> bool:
    """True for a spec that parses and declares no task: empty, only comments, or only
    definitions (which nothing outside the file could use). A file that does not parse is
    left to the parse step, which reports all its syntax errors."""
    try:
        return not _parsed(source).tasks
    except DiagnosticError:
        return False


@functools.lru_cache(maxsize=256)
def _parsed(source: SourceFile) -> ast.Module:
    """A spec is parsed once per process: reading looks for its tasks, the parse step keeps the
    tree (a syntax tree is immutable, and a source is its name and text). Errors are not kept."""
    return parse(source)


def clear_parse_cache() -> None:
    """Forget every parsed spec: the next compile parses again (tests patch the parser)."""
    _parsed.cache_clear()


def _is_library_file(path: Path) -> bool:
    """Library modules (access surfaces, load profiles, macros) rightly hold no task; `arenac
    fmt library/...` reads them through here too. A module is a file of the installed library,
    or one laid out like it (`library/X.arena`, `library/substrates/NAME/X.arena`), as in a
    checkout whose library is not the installed one."""
    resolved = path.resolve()
    if resolved.is_relative_to(library_files.library_root().resolve()):
        return True
    parents = [parent.name for parent in resolved.parents[:3]]
    return parents[:1] == ["library"] or parents[1:3] == ["substrates", "library"]


def _display_name(path: Path) -> str:
    """Relative to the working directory when inside it: artefacts never hold absolute paths."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# ---- parse, lower, check, expand ----------------------------------------------------------------


def parse_sources(sources: dict[str, SourceFile], shown: dict[str, SourceFile]) -> list[ast.Module]:
    """One syntax tree per spec; the syntax errors of every file are raised together."""
    errors = Collector()
    modules = []
    for source in sources.values():
        try:
            modules.append(_parsed(source))
        except DiagnosticError as error:
            errors.extend(error.diagnostics)
    _raise_if_any(errors, shown)
    return modules


def lower_modules(modules: list[ast.Module], library: Library, macros: LibraryMacros,
                  shown: dict[str, SourceFile]) -> list[LoweredTask]:
    """Every task of every module as typed IR; a task name declared twice is an error (E0208)."""
    errors = Collector()
    lowered = []
    names: dict[str, str] = {}
    for module in modules:
        for task in module.tasks:
            if task.name.text in names:
                errors.error("E0208", f"task '{task.name.text}' is also declared in {names[task.name.text]}",
                             task.name.span)
                continue
            names[task.name.text] = module.file
            item = lower_task(task, module, library, macros, errors)
            if item is not None:
                lowered.append(item)
    _raise_if_any(errors, shown)
    return lowered


def check_tasks(lowered: list[LoweredTask], shown: dict[str, SourceFile]) -> None:
    """The checks over each task as a whole (`arenac.validate.check_task`)."""
    errors = Collector()
    for item in lowered:
        check_task(item, errors)
    _raise_if_any(errors, shown)


def expand_tasks(lowered: list[LoweredTask], library: Library, shown: dict[str, SourceFile],
                 voids: VoidCheck | None = None) -> list[CompiledTask]:
    """Each task's matrix, cell by cell: a built cell is checked as a variant and listed, a
    pruned one is kept with its reason; a matrix of pruned cells only is an error (E0403).
    A mistake found in several variants of a task is reported once, "(in N variants)". With VOIDS,
    a built cell's faults the load never makes manifest (E0522) and a cell a blind restart repairs
    (E0528) are the task's warnings, each once however many cells share it, and so is a queue
    protected across a restart that the healthy datastore does not survive (E0530)."""
    errors = Collector()
    compiled = [_expand_task(item, library, errors, voids) for item in lowered]
    _raise_if_any(errors, shown)
    return compiled


def _expand_task(item: LoweredTask, library: Library, errors: Collector, voids: VoidCheck | None) -> CompiledTask:
    listed: list[VariantCell] = []
    pruned: list[PrunedCell] = []
    warnings: dict[tuple[str, str], Diagnostic] = {}  # one per fault and message, not one per cell
    per_variant = Collector()
    named: dict[int, str] = {}  # a diagnostic (by id) -> the " (variant ...)" its message ends with
    for cell in cells(item.spec, library, per_variant):
        if isinstance(cell, PrunedCell):
            pruned.append(cell)
            continue
        found = len(per_variant.items)
        check_variant(item, cell, per_variant)
        named.update((id(d), f" (variant {cell_words(cell.coordinates)})") for d in per_variant.items[found:])
        if voids is not None:
            cell_warnings = voids.warnings(cell, item.spans.faults)
            blind = blind_restart_warning(cell, library, lambda fault: item.spans.faults.get(fault, item.spans.task))
            if blind is not None:
                cell_warnings.append(blind)
            warnings.update(((w.message, str(w.span)), w) for w in cell_warnings)
        listed.append(VariantCell(task=cell.task, id=cell.id, coordinates=cell.coordinates, access=cell.access.name))
    if voids is not None:  # the task's, not a cell's: the healthy control runs no fault
        warnings.update(((w.message, str(w.span)), w) for w in unkept_queue_warnings(item))
    errors.extend(merge_repeats(per_variant.items, lambda n: f"in {n} variants",
                                lambda d: d.message.removesuffix(named.get(id(d), ""))))
    check_matrix(item, len(listed), pruned, errors)
    return CompiledTask(item, tuple(listed), tuple(pruned), tuple(warnings.values()))


def _raise_if_any(errors: Collector, shown: dict[str, SourceFile]) -> None:
    if errors.items:
        raise DiagnosticError(errors.items, sources=shown)


# ---- render and write ----------------------------------------------------------------------------


def render_task(task: CompiledTask, library: Library, spec_text: str) -> Iterator[RenderedBundle]:
    """The bundle of each variant of a checked task, rebuilt and rendered one at a time."""
    for variant in built(task.lowered.spec, library):
        yield RenderedBundle(variant.task, variant.id, render_variant(variant, library, spec_text))


def render_variant(variant: Variant, library: Library, spec_text: str) -> dict[str, str | bytes]:
    """Every file of one variant's bundle, and its manifest over them and over its inputs."""
    # lazily: `arenac check` never renders, and loading the renderer (its plan models) costs ~20 ms
    from arenac.render.bundle_files import EXECUTABLES, bundle_files

    entry = library.substrates[variant.spec.substrate]
    files = bundle_files(variant, entry.descriptor, entry.chart_dir)
    files[MANIFEST] = manifest_for(files, _inputs(variant, library, spec_text), variant.task, variant.id, EXECUTABLES)
    return files


def spec_input_path(source: str) -> str:
    """How the manifest names the spec: by its file name only, so that the same spec compiled
    from any directory gives the same manifest (and no absolute path reaches an artefact)."""
    return "spec/" + Path(source).name


def _inputs(variant: Variant, library: Library, spec_text: str) -> dict[str, bytes]:
    """The files the variant drew on: its substrate's descriptor and modules, its fault
    templates, and the spec."""
    directory = library.substrates[variant.spec.substrate].directory
    used = [directory / "substrate.yaml", *sorted(directory.glob("*.arena"))]
    used += [directory / "faults" / f"{f.template.split('.', 1)[1]}.yaml" for f in variant.faults]
    inputs = {library.relative(path): _read_library_file(path) for path in used if path.is_file()}
    inputs[spec_input_path(variant.spec.source)] = spec_text.encode("utf-8")
    return inputs


@functools.lru_cache(maxsize=256)
def _read_library_file(path: Path) -> bytes:
    """Library files are read once per process (a compile run sees one library)."""
    return path.read_bytes()


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
