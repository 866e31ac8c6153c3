"""The standard library: substrates, fault templates, access and load profiles, macros.

Layout (package data `arenac.library`, the repository's `library/` folder):

    library/substrates/<name>/substrate.yaml      the substrate descriptor
    library/substrates/<name>/faults/*.yaml       fault templates (data: they hold actions)
    library/substrates/<name>/*.arena             access surfaces, load profiles, gate macros
    library/substrates/<name>/chart/              the substrate's Helm chart
    library/<module>.arena                        shared definitions, imported with `use <module>`

Everything is loaded once per process and validated; a broken library file is reported
like a spec error, with its path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from arenac.diagnostics import Collector, Diagnostic, DiagnosticError
from arenac.model.access import AccessSurface
from arenac.model.library import FaultTemplate, LoadProfile
from arenac.model.substrate import Substrate
from arenac.serialize import load_yaml
from arenac.source import SourceFile
from arenac.syntax import ast


@dataclass
class Namespace:
    """The definitions one `use` (or a task's substrate) makes visible."""

    access: dict[str, AccessSurface] = field(default_factory=dict)
    loads: dict[str, LoadProfile] = field(default_factory=dict)
    macros: dict[str, ast.MacroDef] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # definitions that failed to lower (already reported)


@dataclass
class SubstrateEntry:
    descriptor: Substrate
    directory: Path
    faults: dict[str, FaultTemplate]
    namespace: Namespace

    @property
    def chart_dir(self) -> Path:
        return self.directory / self.descriptor.chart


@dataclass
class Library:
    root: Path
    substrates: dict[str, SubstrateEntry]
    modules: dict[str, ast.Module]  # shared .arena modules by dotted name
    sources: dict[str, SourceFile]  # for diagnostics pointing into the library

    def relative(self, path: Path) -> str:
        return "library/" + path.relative_to(self.root).as_posix()


def library_root() -> Path:
    return Path(str(resources.files("arenac.library")))


@functools.lru_cache(maxsize=4)
def load_library(root: Path | None = None) -> Library:
    import yaml
    from pydantic import ValidationError

    from arenac.lower.access import lower_access
    from arenac.lower.load import lower_load
    from arenac.syntax.parser import parse

    root = root or library_root()
    errors = Collector()
    sources: dict[str, SourceFile] = {}
    library = Library(root=root, substrates={}, modules={}, sources=sources)

    def read_yaml(path: Path, model):
        try:
            return model.model_validate(load_yaml(path.read_text(encoding="utf-8")))
        except (ValidationError, yaml.YAMLError, OSError) as error:
            errors.error("E0601", f"invalid library file {library.relative(path)}: {_first_line(error)}")
            return None

    def parse_module(path: Path) -> ast.Module | None:
        source = SourceFile(library.relative(path), path.read_text(encoding="utf-8"))
        sources[source.name] = source
        try:
            return parse(source)
        except DiagnosticError as error:
            errors.extend(error.diagnostics)
            return None

    for substrate_dir in sorted((root / "substrates").iterdir()) if (root / "substrates").is_dir() else []:
        descriptor_path = substrate_dir / "substrate.yaml"
        if not descriptor_path.is_file():
            continue
        descriptor = read_yaml(descriptor_path, Substrate)
        if descriptor is None:
            continue
        faults: dict[str, FaultTemplate] = {}
        for fault_path in sorted((substrate_dir / "faults").glob("*.yaml")):
            raw = _with_defaults(fault_path, descriptor.name)
            template = None
            try:
                template = FaultTemplate.model_validate(raw)
            except ValidationError as error:
                errors.error("E0601", f"invalid fault template {library.relative(fault_path)}: {_first_line(error)}")
            if template is not None:
                faults[template.name] = template
        namespace = Namespace()
        for module_path in sorted(substrate_dir.glob("*.arena")):
            module = parse_module(module_path)
            if module is not None:
                _fill_namespace(namespace, module, descriptor, errors, lower_access, lower_load)
        library.substrates[descriptor.name] = SubstrateEntry(descriptor, substrate_dir, faults, namespace)

    for module_path in sorted(root.glob("*.arena")):
        module = parse_module(module_path)
        if module is not None:
            library.modules[module_path.stem] = module
    errors.raise_if_any()
    return library


def _fill_namespace(namespace: Namespace, module: ast.Module, substrate: Substrate, errors: Collector,
                    lower_access, lower_load) -> None:
    for defn in module.access_defs:
        surface = lower_access(defn, substrate, errors)
        if surface is not None:
            namespace.access[surface.name] = surface
    for defn in module.loads:
        profile = lower_load(defn, substrate, errors)
        if profile is not None:
            namespace.loads[profile.name] = profile
    for macro in module.macros:
        namespace.macros[macro.name.text] = macro


def _with_defaults(path: Path, substrate: str) -> dict:
    raw = load_yaml(path.read_text(encoding="utf-8")) or {}
    raw.setdefault("substrate", substrate)
    return raw


def _first_line(error: Exception) -> str:
    """The first problem, with where it is: a pydantic error as `layers.image.repair.2: message`."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def library_error(message: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic("E0601", message)])
