"""The library and the parser kept between processes (arenac/core/cache.py): an entry is read
only while every file and module it was made from is the same, an edited library file is seen,
a broken one is reported every time, and what comes back is what loading or building gives."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

import arenac.syntax.grammar as grammar
from arenac.core.diagnostics import DiagnosticError
from arenac.lower import library as library_files
from helpers import ROOT


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("ARENAC_CACHE_DIR", str(path))
    library_files.clear_library_cache()
    yield path
    library_files.clear_library_cache()


@pytest.fixture
def library_copy(tmp_path):
    root = tmp_path / "library"
    shutil.copytree(library_files.library_root(), root,
                    ignore=shutil.ignore_patterns("app", "chart", "__pycache__", "*.pyc"))
    return root


def _entries(directory: Path, name: str) -> list[Path]:
    return sorted(directory.glob(f"{name}-*.pickle"))


def test_the_loader_modules_are_the_import_closure_of_the_loader():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("arenac", include_external_packages=False)
    closure = graph.find_upstream_modules("arenac.lower.library") | {"arenac.lower.library"}
    assert set(library_files.LOADER_MODULES) == closure


def test_the_key_covers_every_file_the_loader_reads(library_copy, monkeypatch):
    read: set[Path] = set()
    original_text, original_bytes = Path.read_text, Path.read_bytes

    def read_text(self, *args, **kwargs):
        read.add(self)
        return original_text(self, *args, **kwargs)

    def read_bytes(self):
        read.add(self)
        return original_bytes(self)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    grammar.lark_parser.cache_clear()  # the parser reads the grammar, which the key holds too
    try:
        library_files._load(library_copy)
    finally:
        grammar.lark_parser.cache_clear()
    grammar_file = Path(str(grammar.resources.files("arenac.grammar").joinpath("arena.lark")))
    assert read and read - {grammar_file} <= set(library_files._library_files(library_copy))


def test_a_loaded_library_comes_back_equal_from_the_cache(cache_dir, library_copy):
    fresh = library_files._load(library_copy)
    first = library_files.load_library(library_copy), library_files.library_macros(library_copy)
    assert len(_entries(cache_dir, "library")) == 1
    library_files.clear_library_cache()
    second = library_files.load_library(library_copy), library_files.library_macros(library_copy)
    assert first == fresh and second == fresh
    assert second[0] is not first[0]  # read from the entry, not the process's own


def test_an_edited_library_file_is_seen(cache_dir, library_copy):
    profiles = library_copy / "substrates" / "spine" / "profiles.arena"
    original = profiles.read_text(encoding="utf-8")
    before = library_files.load_library(library_copy).substrates["spine"].loads["standard"]
    rates = {phase.rate for phase in before.phases}
    edited = original.replace("phase peak = 30s at 60/s", "phase peak = 30s at 61/s", 1)
    assert edited != original, "profiles.arena no longer spells a rate this test edits"
    profiles.write_text(edited, encoding="utf-8")
    library_files.clear_library_cache()
    after = library_files.load_library(library_copy).substrates["spine"].loads["standard"]
    assert {phase.rate for phase in after.phases} != rates
    assert len(_entries(cache_dir, "library")) == 1  # the older entry of this root is gone
    profiles.write_text(original, encoding="utf-8")  # and back: the same as at first
    library_files.clear_library_cache()
    assert library_files.load_library(library_copy).substrates["spine"].loads["standard"] == before


def test_a_new_fault_template_is_seen(cache_dir, library_copy):
    assert "pool_size_copy" not in library_files.load_library(library_copy).substrates["spine"].faults
    faults = library_copy / "substrates" / "spine" / "faults"
    text = (faults / "pool_size.yaml").read_text(encoding="utf-8")
    (faults / "pool_size_copy.yaml").write_text(text.replace("name: pool_size", "name: pool_size_copy", 1),
                                                encoding="utf-8")
    library_files.clear_library_cache()
    assert "pool_size_copy" in library_files.load_library(library_copy).substrates["spine"].faults


def test_a_broken_library_is_reported_every_time_and_never_kept(cache_dir, library_copy):
    (library_copy / "substrates" / "spine" / "faults" / "broken.yaml").write_text("name: broken\n", encoding="utf-8")
    for _ in range(2):
        library_files.clear_library_cache()
        with pytest.raises(DiagnosticError) as raised:
            library_files.load_library(library_copy)
        assert [d.code for d in raised.value.diagnostics] == ["E0601"]
    assert _entries(cache_dir, "library") == []


def test_a_changed_loader_module_is_a_new_key(library_copy, monkeypatch):
    key = library_files._key(library_copy)
    assert library_files._key(library_copy) == key
    monkeypatch.setattr(library_files, "LOADER_MODULES", library_files.LOADER_MODULES[:-1])
    assert library_files._key(library_copy) != key


def _tree(value):
    """A parse tree with every token's type, text and position, and every rule's span."""
    if isinstance(value, Tree):
        meta = None if value.meta.empty else (value.meta.line, value.meta.column, value.meta.end_line,
                                               value.meta.end_column, value.meta.start_pos, value.meta.end_pos)
        return (str(value.data), meta, [_tree(child) for child in value.children])
    if isinstance(value, Token):
        return (value.type, str(value), value.line, value.column, value.end_line, value.end_column,
                value.start_pos, value.end_pos)
    return value


def _parsed(parser, text: str, start: str):
    try:
        return _tree(parser.parse(text, start=start))
    except UnexpectedInput as error:
        return (type(error).__name__, str(error), error.line, error.column,
                sorted(getattr(error, "expected", None) or ()), sorted(getattr(error, "allowed", None) or ()))


def test_the_kept_parser_parses_every_spec_as_a_built_one(cache_dir):
    grammar.lark_parser.cache_clear()
    try:
        grammar.lark_parser()
        [entry] = _entries(cache_dir, "parser")
        with entry.open("rb") as handle:
            kept = pickle.load(handle)[2]
        grammar.lark_parser.cache_clear()
        assert grammar.lark_parser() is not kept  # the process reads its own copy of the entry
    finally:
        grammar.lark_parser.cache_clear()
    built = grammar._built(grammar.grammar_text())
    specs = sorted(p for p in ROOT.rglob("*.arena") if not {".venv", "build", "node_modules"} & set(p.parts))
    assert len(specs) > 50
    for spec in specs:  # the diagnostics corpus among them: its syntax errors too
        text = spec.read_text(encoding="utf-8", errors="replace")
        assert _parsed(kept, text, "start") == _parsed(built, text, "start"), spec
    for predicate in ("p99(read) < 150ms", "error_rate(send) <= 1% and rows(t) > 3", "foo(", "a.b == 'x' or"):
        assert _parsed(kept, predicate, "comparison") == _parsed(built, predicate, "comparison"), predicate
