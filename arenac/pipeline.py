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
from arenac.source import SourceFile


@dataclass
class CompiledTask:
    lowered: object  # arenac.lower.task.LoweredTask
    expansion: object  # arenac.model.task.Expansion


@dataclass
class Compilation:
    sources: dict[str, SourceFile] = field(default_factory=dict)
    tasks: list[CompiledTask] = field(default_factory=list)


def discover(paths: list[str]) -> list[Path]:
    """Spec files named directly, or found (sorted) under named directories."""
    found: list[Path] = []
    missing: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.arena") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            missing.append(Diagnostic("E0602", f"no such file or directory: {raw}"))
    if missing:
        raise DiagnosticError(missing)
    return found


def read_sources(paths: list[str]) -> dict[str, SourceFile]:
    sources: dict[str, SourceFile] = {}
    problems: list[Diagnostic] = []
    for path in discover(paths):
        name = _display_name(path)
        try:
            sources[name] = SourceFile(name, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            problems.append(Diagnostic("E0603", f"cannot read {name}: {error.__class__.__name__}"))
    if problems:
        raise DiagnosticError(problems)
    return sources


def _display_name(path: Path) -> str:
    """Relative to the working directory when inside it: artefacts never hold absolute paths."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def compile_sources(sources: dict[str, SourceFile]) -> Compilation:
    from arenac.catalog import load_library
    from arenac.lower.task import lower_task
    from arenac.syntax.parser import parse
    from arenac.validate import check_expansion, check_task
    from arenac.variants import expand

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
        expansion = expand(item.spec, library, errors)
        check_expansion(item, expansion, errors)
        result.tasks.append(CompiledTask(item, expansion))
    _raise(errors, result)
    return result


def _raise(errors: Collector, result: Compilation) -> None:
    if errors.items:
        error = DiagnosticError(errors.items)
        error.sources = result.sources  # type: ignore[attr-defined]
        raise error


def compile_paths(paths: list[str]) -> Compilation:
    return compile_sources(read_sources(paths))
