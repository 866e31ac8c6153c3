"""The compiler pipeline, chained in one place.

    sources --parse--> modules --lower--> task IR --check--> --expand--> variants --check-->
    --render--> bundle files --write--> build/<task>/<variant>/

Each phase collects every diagnostic it finds; the pipeline stops after the first phase
that found any and raises them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from arenac.diagnostics import Collector, Diagnostic, DiagnosticError
from arenac.source import SourceFile, Span


@dataclass
class CompiledTask:
    """A checked task and its matrix as listed: built cells and pruned ones. The variants
    themselves are rebuilt one at a time when rendered (`arenac.variants.built`)."""

    lowered: object  # arenac.lower.task.LoweredTask
    variants: tuple  # of arenac.model.task.VariantCell
    pruned: tuple  # of arenac.model.task.PrunedCell


@dataclass
class Compilation:
    sources: dict[str, SourceFile] = field(default_factory=dict)
    tasks: list[CompiledTask] = field(default_factory=list)


def discover(paths: list[str]) -> list[Path]:
    """Spec files named directly, or found (sorted) under named directories.

    Raises one DiagnosticError naming every path that does not exist (E0602) and every
    directory with no .arena file under it (E0604).
    """
    found, problems = _discover(paths)
    if problems:
        raise DiagnosticError(problems)
    return found


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
        if problem is None and not _is_library_file(path) and _defines_no_task(source):
            problem = Diagnostic("E0605", "the file defines no task", Span.point(name, 1, 1),
                                 "a spec file holds at least one `task NAME { ... }`")
        if problem is not None:
            problems.append(problem)
        else:
            sources[name] = source
    if problems:
        error = DiagnosticError(problems)
        error.sources = shown  # type: ignore[attr-defined]
        raise error
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
    left to the parse phase, which reports all its syntax errors."""
    from arenac.syntax.parser import parse

    try:
        return not parse(source).tasks
    except DiagnosticError:
        return False


def _is_library_file(path: Path) -> bool:
    """Library modules (access surfaces, load profiles, macros) rightly hold no task; `arenac
    fmt library/...` reads them through here too. A module is a file of the installed library,
    or one laid out like it (`library/X.arena`, `library/substrates/NAME/X.arena`), as in a
    checkout whose library is not the installed one."""
    from arenac.catalog import library_root

    resolved = path.resolve()
    if resolved.is_relative_to(library_root().resolve()):
        return True
    parents = [parent.name for parent in resolved.parents[:3]]
    return parents[:1] == ["library"] or parents[1:3] == ["substrates", "library"]


def _display_name(path: Path) -> str:
    """Relative to the working directory when inside it: artefacts never hold absolute paths."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def compile_sources(sources: dict[str, SourceFile]) -> Compilation:
    from arenac.catalog import load_library
    from arenac.lower.task import lower_task
    from arenac.model.task import PrunedCell, VariantCell
    from arenac.syntax.parser import parse
    from arenac.validate import check_matrix, check_task, check_variant
    from arenac.variants import cells

    library = load_library()
    result = Compilation(sources=dict(sources))
    result.sources.update(library.sources)

    # parse
    errors = Collector()
    modules = []
    for source in sources.values():
        try:
            modules.append(parse(source))
        except DiagnosticError as error:
            errors.extend(error.diagnostics)
    _raise(errors, result)

    # lower
    lowered = []
    names: dict[str, str] = {}
    for module in modules:
        for task in module.tasks:
            if task.name.text in names:
                errors.error("E0208", f"task '{task.name.text}' is also declared in {names[task.name.text]}",
                             task.name.span)
                continue
            names[task.name.text] = module.file
            item = lower_task(task, module, library, errors)
            if item is not None:
                lowered.append(item)
    _raise(errors, result)

    # check and expand
    for item in lowered:
        check_task(item, errors)
    _raise(errors, result)
    for item in lowered:
        listed: list[VariantCell] = []
        pruned: list[PrunedCell] = []
        for cell in cells(item.spec, library, errors):
            if isinstance(cell, PrunedCell):
                pruned.append(cell)
                continue
            check_variant(item, cell, errors)
            listed.append(VariantCell(task=cell.task, id=cell.id, coordinates=cell.coordinates,
                                      access=cell.access.name))
        check_matrix(item, len(listed), pruned, errors)
        result.tasks.append(CompiledTask(item, tuple(listed), tuple(pruned)))
    _raise(errors, result)
    return result


def _raise(errors: Collector, result: Compilation) -> None:
    if errors.items:
        error = DiagnosticError(errors.items)
        error.sources = result.sources  # type: ignore[attr-defined]
        raise error


def compile_paths(paths: list[str]) -> Compilation:
    return compile_sources(read_sources(paths))
