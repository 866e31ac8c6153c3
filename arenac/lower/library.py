"""Load the standard library: substrates, fault templates, access and load profiles, macros.

Layout (package data `arenac.library`, the repository's `library/` folder):

    library/substrates/<name>/substrate.yaml      the substrate descriptor
    library/substrates/<name>/faults/*.yaml       fault templates (data: they hold actions)
    library/substrates/<name>/*.arena             access surfaces, load profiles, gate macros
    library/substrates/<name>/chart/              the substrate's Helm chart
    library/<module>.arena                        shared definitions, imported with `use <module>`

Contract: `load_library()` gives the library as plain data (`arenac.model.library.Library`),
with every access surface and load profile lowered; `library_macros()` gives its gate
macros, which stay syntax until a task expands them in its own context. Both are loaded
together, once per process and root, and validated (and kept between processes in the
per-user cache, arenac/core/cache.py, under a key made of every file and module they depend
on); a broken library file is reported like a spec error, with its path. This is the
compiler's only reader of the library: it parses, so it sits with lowering, and nothing below
lowering (nor the runner or the substrates) imports it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import lark
import pydantic
import pydantic_core
import yaml
from pydantic import BaseModel, ValidationError

from arenac.core import cache
from arenac.core.diagnostics import Collector, DiagnosticError
from arenac.core.serialize import load_yaml
from arenac.core.source import SourceFile
from arenac.lower.access import lower_access
from arenac.lower.load import lower_load
from arenac.model.access import AccessSurface
from arenac.model.baseline import BASELINES, Baseline
from arenac.model.library import FaultTemplate, Library, LoadProfile, SubstrateEntry
from arenac.model.substrate import Substrate
from arenac.syntax import ast
from arenac.syntax.grammar import grammar_text
from arenac.syntax.parser import parse

Macros = dict[str, ast.MacroDef]


@dataclass(frozen=True)
class LibraryMacros:
    """The library's gate macros by name: per substrate, and per shared module (dotted name)."""

    substrates: dict[str, Macros]
    modules: dict[str, Macros]


@dataclass
class Namespace:
    """The definitions one task can name: its substrate's, its `use`d modules', its own."""

    access: dict[str, AccessSurface] = field(default_factory=dict)
    loads: dict[str, LoadProfile] = field(default_factory=dict)
    macros: Macros = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # definitions that failed to lower (already reported)


def library_root() -> Path:
    return Path(str(resources.files("arenac.library")))


def load_library(root: Path | None = None) -> Library:
    """The library's data (loaded once per root; raises DiagnosticError for a broken file)."""
    return _loaded(root or library_root())[0]


def library_macros(root: Path | None = None) -> LibraryMacros:
    """The library's gate macros (loaded with its data)."""
    return _loaded(root or library_root())[1]


def clear_library_cache() -> None:
    """Forget every loaded library: the next load looks at the files again (tests edit copies; the
    per-user cache is keyed by their content, so an edit is seen)."""
    _loaded.cache_clear()


# this module and every arenac module it imports, directly or not: the code that decides what
# `_load` makes of the library's files, part of the cache's key (a test checks the list against
# the import graph, so that a new import cannot leave a module out)
LOADER_MODULES: tuple[str, ...] = (
    "arenac.core.cache",
    "arenac.core.diagnostics",
    "arenac.core.serialize",
    "arenac.core.source",
    "arenac.core.units",
    "arenac.lower.access",
    "arenac.lower.library",
    "arenac.lower.load",
    "arenac.model.access",
    "arenac.model.actions",
    "arenac.model.base",
    "arenac.model.baseline",
    "arenac.model.library",
    "arenac.model.rbac",
    "arenac.model.record",
    "arenac.model.redis_settings",
    "arenac.model.substrate",
    "arenac.syntax.ast",
    "arenac.syntax.errors",
    "arenac.syntax.grammar",
    "arenac.syntax.parser",
    "arenac.syntax.transform",
    "arenac.syntax.transform_guards",
    "arenac.syntax.unparse",
)


@functools.lru_cache(maxsize=4)
def _loaded(root: Path) -> tuple[Library, LibraryMacros]:
    """Once per process and root, and across processes from the per-user cache (arenac/core/
    cache.py: loading was about a seventh of `arenac check` on one spec), while the library's
    files, the code that reads them and the packages that code uses are the same (`_key`). A
    library with errors is never kept: its diagnostics come from loading it, every time."""
    name = "library-" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return cache.cached(name, lambda: _key(root), lambda: _load(root))


def _key(root: Path) -> str:
    """A digest of everything the loaded library depends on: the versions of the packages the
    loader uses, the root (the library's paths are absolute), the name and content of every file
    `_load` reads, the loader's code and the grammar's text (raises OSError for an unreadable file)."""
    key = cache.Fingerprint()
    versions = (pydantic.VERSION, pydantic_core.__version__, lark.__version__, yaml.__version__,
                yaml.__with_libyaml__)
    key.add("versions", repr(versions).encode())
    key.add("root", str(root).encode())
    for path in _library_files(root):
        key.add_file("library:" + path.relative_to(root).as_posix(), path)
    key.add_modules(LOADER_MODULES)
    key.add("grammar", grammar_text().encode())
    return key.hexdigest()


def _library_files(root: Path) -> list[Path]:
    """Every file `_load` reads, as it finds them: each substrate's descriptor, fault templates
    and modules, then the shared modules (what the cache's key is made of)."""
    files: list[Path] = []
    for substrate_dir in sorted((root / "substrates").iterdir()) if (root / "substrates").is_dir() else []:
        descriptor_path = substrate_dir / "substrate.yaml"
        if descriptor_path.is_file():
            files.append(descriptor_path)
            files.extend(sorted((substrate_dir / BASELINES).glob("*.json")))
            files.extend(sorted((substrate_dir / "faults").glob("*.yaml")))
            files.extend(sorted(substrate_dir.glob("*.arena")))
    files.extend(sorted(root.glob("*.arena")))
    return files


def _load(root: Path) -> tuple[Library, LibraryMacros]:
    reader = _Reader(root)
    substrates: dict[str, SubstrateEntry] = {}
    substrate_macros: dict[str, Macros] = {}
    for substrate_dir in sorted((root / "substrates").iterdir()) if (root / "substrates").is_dir() else []:
        descriptor_path = substrate_dir / "substrate.yaml"
        if not descriptor_path.is_file():
            continue
        descriptor = reader.model(descriptor_path, Substrate)
        if descriptor is None:
            continue
        entry = SubstrateEntry(descriptor, substrate_dir, reader.fault_templates(substrate_dir, descriptor.name),
                               access={}, loads={}, baselines=reader.baselines(substrate_dir, descriptor.name))
        macros: Macros = {}
        for module_path in sorted(substrate_dir.glob("*.arena")):
            module = reader.module(module_path)
            if module is not None:
                _define(entry, macros, module, reader.errors)
        substrates[descriptor.name] = entry
        substrate_macros[descriptor.name] = macros
    module_macros: dict[str, Macros] = {}
    for module_path in sorted(root.glob("*.arena")):
        module = reader.module(module_path)
        if module is not None:
            module_macros[module_path.stem] = {m.name.text: m for m in module.macros}
    reader.errors.raise_if_any()
    return Library(root, substrates, reader.sources), LibraryMacros(substrate_macros, module_macros)


class _Reader:
    """Reads the files of one library root, collecting every problem as a diagnostic."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.errors = Collector()
        self.sources: dict[str, SourceFile] = {}

    def relative(self, path: Path) -> str:
        return "library/" + path.relative_to(self.root).as_posix()

    def model(self, path: Path, model: type[BaseModel]):
        try:
            return model.model_validate(load_yaml(path.read_text(encoding="utf-8")))
        except (ValidationError, yaml.YAMLError, OSError) as error:
            self.errors.error("E0601", f"invalid library file {self.relative(path)}: {_first_line(error)}")
            return None

    def baselines(self, substrate_dir: Path, substrate: str) -> dict[str, tuple[str, ...]]:
        """baselines/PROFILE.json -> PROFILE: the routes it has figures for; a file whose record
        names another profile (or substrate) is an error, never read as PROFILE's."""
        found: dict[str, tuple[str, ...]] = {}
        for path in sorted((substrate_dir / BASELINES).glob("*.json")):
            baseline = self.model(path, Baseline)
            if baseline is None:
                continue
            if (baseline.substrate, baseline.profile_name) != (substrate, f"{substrate}.{path.stem}"):
                self.errors.error("E0601", f"invalid library file {self.relative(path)}: it is the calibration of "
                                  f"{baseline.substrate}'s profile '{baseline.profile_name}', not of "
                                  f"{substrate}.{path.stem}")
                continue
            found[path.stem] = tuple(route for route in baseline.routes if route != "all")
        return found

    def fault_templates(self, substrate_dir: Path, substrate: str) -> dict[str, FaultTemplate]:
        faults: dict[str, FaultTemplate] = {}
        for fault_path in sorted((substrate_dir / "faults").glob("*.yaml")):
            raw = load_yaml(fault_path.read_text(encoding="utf-8")) or {}
            raw.setdefault("substrate", substrate)
            try:
                template = FaultTemplate.model_validate(raw)
            except ValidationError as error:
                self.errors.error("E0601", f"invalid fault template {self.relative(fault_path)}: "
                                  f"{_first_line(error)}")
                continue
            faults[template.name] = template
        return faults

    def module(self, path: Path) -> ast.Module | None:
        source = SourceFile(self.relative(path), path.read_text(encoding="utf-8"))
        self.sources[source.name] = source
        try:
            return parse(source)
        except DiagnosticError as error:
            self.errors.extend(error.diagnostics)
            return None


def _define(entry: SubstrateEntry, macros: Macros, module: ast.Module, errors: Collector) -> None:
    """Lower a substrate module's access surfaces and load profiles into its entry; keep its macros."""
    for defn in module.access_defs:
        surface = lower_access(defn, entry.descriptor, errors)
        if surface is not None:
            entry.access[surface.name] = surface
    for load_def in module.loads:
        profile = lower_load(load_def, entry.descriptor, errors)
        if profile is not None:
            entry.loads[profile.name] = profile
    for macro in module.macros:
        macros[macro.name.text] = macro


def _first_line(error: Exception) -> str:
    """The first problem, with where it is: a pydantic error as `layers.image.repair.2: message`."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
