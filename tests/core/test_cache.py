"""The per-user cache of pickled values (arenac/core/cache.py): what it keeps, when it makes the
value again, and that nothing wrong with an entry or the directory is ever an error."""

from __future__ import annotations

import os

import pytest

from arenac.core import cache

SHIFT = object()  # a module global compared by identity, as lark's Shift is


@pytest.fixture
def directory(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("ARENAC_CACHE_DIR", str(path))
    return path


class Maker:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_a_value_is_made_once_then_read(directory):
    make = Maker({"a": (1, 2.5, "x")})
    assert cache.cached("thing", lambda: "k1", make) == {"a": (1, 2.5, "x")}
    assert cache.cached("thing", lambda: "k1", make) == {"a": (1, 2.5, "x")}
    assert make.calls == 1
    assert [p.name for p in directory.iterdir()] == ["thing-k1.pickle"]  # no temporary file left
    assert oct(directory.stat().st_mode & 0o777) == "0o700"


def test_a_new_key_makes_the_value_again_and_drops_the_old_entry(directory):
    cache.cached("thing", lambda: "k1", Maker(1))
    make = Maker(2)
    assert cache.cached("thing", lambda: "k2", make) == 2
    assert make.calls == 1
    assert sorted(p.name for p in directory.iterdir()) == ["thing-k2.pickle"]
    cache.cached("other", lambda: "k1", Maker(3))  # another name's entries are its own
    assert sorted(p.name for p in directory.iterdir()) == ["other-k1.pickle", "thing-k2.pickle"]


def test_a_value_that_cannot_be_made_is_not_kept(directory):
    def broken():
        raise ValueError("broken library")

    with pytest.raises(ValueError):
        cache.cached("thing", lambda: "k1", broken)
    with pytest.raises(ValueError):
        cache.cached("thing", lambda: "k1", broken)
    assert not directory.exists() or not list(directory.iterdir())


@pytest.mark.parametrize("damage", ["truncated", "empty", "foreign", "another key"])
def test_a_damaged_entry_is_a_miss_and_is_written_again(directory, damage):
    cache.cached("thing", lambda: "k1", Maker([1, 2, 3]))
    entry = directory / "thing-k1.pickle"
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:-5])
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "foreign":
        entry.write_bytes(b"not a pickle at all")
    else:  # an entry renamed from another key: its own key does not match
        cache.cached("thing", lambda: "k0", Maker([9]))
        os.replace(directory / "thing-k0.pickle", entry)
    make = Maker([1, 2, 3])
    assert cache.cached("thing", lambda: "k1", make) == [1, 2, 3]
    assert make.calls == 1
    again = Maker(None)
    assert cache.cached("thing", lambda: "k1", again) == [1, 2, 3]
    assert again.calls == 0


def test_a_key_that_cannot_be_made_means_no_cache(directory):
    def unreadable():
        raise OSError("cannot read an input")

    make = Maker(5)
    assert cache.cached("thing", unreadable, make) == 5
    assert cache.cached("thing", unreadable, make) == 5
    assert make.calls == 2
    assert not directory.exists()


def test_an_empty_setting_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("ARENAC_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    make = Maker(5)
    cache.cached("thing", lambda: "k1", make)
    cache.cached("thing", lambda: "k1", make)
    assert make.calls == 2
    assert not list(tmp_path.iterdir())


def test_the_default_place_is_under_the_users_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("ARENAC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_directory() == tmp_path / "arenac"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not a place: falls back to the home's
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_directory() == tmp_path / "home" / ".cache" / "arenac"


def test_a_directory_others_may_write_to_is_neither_read_nor_written(directory):
    cache.cached("thing", lambda: "k1", Maker(1))
    directory.chmod(0o777)
    make = Maker(2)
    assert cache.cached("thing", lambda: "k1", make) == 2  # the entry there is not trusted
    assert cache.cached("thing", lambda: "k2", make) == 2
    assert make.calls == 2
    assert sorted(p.name for p in directory.iterdir()) == ["thing-k1.pickle"]


def test_singletons_come_back_as_themselves_and_modules_as_their_import(directory):
    value = {"action": SHIFT, "module": os}
    cache.cached("thing", lambda: "k1", Maker(value), {"SHIFT": SHIFT})
    found = cache.cached("thing", lambda: "k1", Maker(None))
    assert found["action"] is SHIFT
    assert found["module"] is os


def test_a_fingerprint_sees_every_byte_and_where_it_came_from(tmp_path):
    def digest(*parts):
        key = cache.Fingerprint()
        for label, data in parts:
            key.add(label, data)
        return key.hexdigest()

    assert digest(("a", b"xy")) == digest(("a", b"xy"))
    assert len({digest(("a", b"xy")), digest(("a", b"xz")), digest(("b", b"xy")),
                digest(("a", b"x"), ("a", b"y"))}) == 4
    (tmp_path / "f").write_bytes(b"1")
    key = cache.Fingerprint()
    with pytest.raises(OSError):
        key.add_file("missing", tmp_path / "missing")
    with pytest.raises(OSError):
        key.add_modules(("arenac.no_such_module",))
