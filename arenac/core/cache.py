"""A per-user cache of pickled values, each kept under a key made of everything that makes it.

`arenac check` in a new process spent about a seventh of its work loading the library and a
twentieth building the grammar's parser from lark's own cache (docs/performance.md, issue 10).
Both depend only on files and code that change rarely, so they are kept here between processes:

    $ARENAC_CACHE_DIR, else $XDG_CACHE_HOME/arenac, else ~/.cache/arenac   (ARENAC_CACHE_DIR= : none)
        <name>-<key>.pickle

The caller makes the key (`Fingerprint`): a digest of everything the value depends on, so an
entry is never stale; a changed input is a new key, and the value is made again. This module
promises the rest:

- a value is made by `make()`; when it raises (a broken library), nothing is written;
- an entry is written to a temporary file and renamed into place, so a reader sees a whole entry
  or none, and it carries its key, checked on reading;
- anything wrong when reading (a missing, truncated or foreign entry, a class that no longer
  unpickles) is a miss: the value is made, as without a cache, and written again;
- the directory is created private (0700) and used only while it belongs to the user and no one
  else may write to it: unpickling runs code, so only the user's own entries are read;
- a cache that cannot be had (no home, a read-only disk) costs the time of making the value;
- writing an entry removes the older entries of the same name.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import pickle
import stat
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# bump when entries change shape in a way their keys would not show
CACHE_FORMAT = 1


class Fingerprint:
    """A key under construction: labelled byte strings, each length-prefixed, into SHA-256; it
    starts with this format's number and Python's version."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self.add("format", repr((CACHE_FORMAT, sys.version, sys.implementation.cache_tag)).encode())

    def add(self, label: str, data: bytes) -> None:
        self._digest.update(f"{label}\0{len(data)}\0".encode())
        self._digest.update(data)

    def add_file(self, label: str, path: Path) -> None:
        """A file's content (raises OSError when it cannot be read)."""
        self.add(label, path.read_bytes())

    def add_modules(self, names: tuple[str, ...]) -> None:
        """The source of each module (imported already); raises OSError for one without a file."""
        for name in names:
            source = getattr(sys.modules.get(name), "__file__", None)
            if source is None:
                raise OSError(f"no source file for {name}")
            self.add_file("module:" + name, Path(source))

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def cache_directory() -> Path | None:
    """Where entries are kept, or None for no cache (`ARENAC_CACHE_DIR` set and empty, or no home)."""
    configured = os.environ.get("ARENAC_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative (which the XDG spec says to ignore)
        base = os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):  # `~` left as it is: no home, no cache
        return None
    return Path(base) / "arenac"


def cached(name: str, key: Callable[[], str], make: Callable[[], T],
           singletons: dict[str, object] | None = None) -> T:
    """The value kept under NAME for the key `key()` gives, else `make()`'s (then kept). `key`
    raising OSError (an input that cannot be read) means no cache: `make` reports the problem.
    `singletons` are module globals (by their name in their module) that the value holds and
    that must come back as themselves, not as copies."""
    directory = cache_directory()
    if directory is None:
        return make()
    try:
        digest = key()
    except OSError:
        return make()
    path = directory / f"{name}-{digest}.pickle"
    found = _read(directory, path, digest)
    if found is not None:
        value: T = found[0]
        return value
    value = make()
    by_identity = {id(obj): global_name for global_name, obj in (singletons or {}).items()}
    _write(directory, path, name, digest, value, by_identity)
    return value


def _private(directory: Path) -> bool:
    """The directory is the user's and no one else may write to it."""
    info = directory.stat()
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _read(directory: Path, path: Path, digest: str) -> tuple[Any] | None:
    """The entry's value (in a 1-tuple: a value may be falsy), or None for a miss."""
    try:
        if not _private(directory):
            return None
        with path.open("rb") as handle:
            entry = pickle.load(handle)
    except Exception:  # missing, truncated, foreign or no longer unpickling: a miss, never an error
        return None
    if not (isinstance(entry, tuple) and len(entry) == 3 and entry[:2] == (CACHE_FORMAT, digest)):
        return None
    return (entry[2],)


class _Pickler(pickle.Pickler):
    """Pickles a reference to a module (lark's lexers keep the `re` module they compile with) as
    its import, and each of the caller's `singletons` (objects compared by identity, such as
    lark's Shift and Reduce) as the module global it is, so that unpickling gives it back itself."""

    def __init__(self, file: io.BytesIO, singletons: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.singletons = singletons

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        return self.singletons.get(id(obj), NotImplemented)


def _write(directory: Path, path: Path, name: str, digest: str, value: object,
           singletons: dict[int, str]) -> None:
    """Write the entry whole and drop NAME's older entries; a cache that cannot be written costs
    the next run the making of the value, nothing else."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(directory):
            return
        buffer = io.BytesIO()
        _Pickler(buffer, singletons).dump((CACHE_FORMAT, digest, value))
        handle, temporary = tempfile.mkstemp(prefix=f".{name}-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(buffer.getbuffer())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
        for stale in directory.glob(f"{name}-*.pickle"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return
