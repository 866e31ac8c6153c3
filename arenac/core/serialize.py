"""The one serializer: canonical JSON and YAML for every generated artefact, and the one way to
put a record on disk.

Sorted keys, LF line endings, UTF-8, a trailing newline, no timestamps. Two runs over
the same data produce the same bytes, whatever PYTHONHASHSEED is.

`write_atomic(path, data)` replaces a file so that a reader (or a machine that loses power) sees
either the old content or the new one, never a part: the runner's records and the verifier's
verdicts both use it (it lives here, beside the serializer both already import, so that the
verifier does not import the runner).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from pydantic import BaseModel


def dump_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _yaml_dumper() -> Any:  # yaml.CSafeDumper or yaml.SafeDumper: the classes share no base
    # libyaml's emitter writes the same bytes as the pure-Python one (tests/pipeline/test_determinism.py
    # checks it over every bundle), four times faster; machines without libyaml use the latter.
    return getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: Any, dumper: Any = None) -> str:
    return yaml.dump(data, Dumper=dumper or _yaml_dumper(), sort_keys=True, default_flow_style=False,
                     allow_unicode=True, width=100)


def load_yaml(text: str) -> Any:
    """Parse one YAML document safely, with libyaml's parser when present (about ten times faster
    than the pure-Python one; the library's files are read on every `arenac check`)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def dump_yaml_documents(documents: list[Any]) -> str:
    return "".join("---\n" + dump_yaml(doc) for doc in documents)


def model_data(model: BaseModel) -> Any:
    """A pydantic model as plain JSON-compatible data."""
    return model.model_dump(mode="json")


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` (text as UTF-8) to `path` atomically and durably.

    A temporary file with a unique name in the same directory (two writers of one path never
    share one), flushed and fsynced, then os.replace onto `path`, then the directory fsynced (the
    rename itself must survive a crash). On any failure the temporary file is removed and `path`
    keeps its old content. The file gets the mode an ordinary create would (0666 less the umask),
    not mkstemp's 0600, or `mode` when given (set before a byte is written: a secret's 0600 is
    never wider, even for a moment). The parent directory must exist.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data  # encoding errors before any file exists
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), mode if mode is not None else 0o666 & ~_umask())
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries (a rename, a removal) durable."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _umask() -> int:
    # Read, not set: os.umask() can only be read by changing it, which would race with other
    # threads creating files meanwhile. Linux reports it in /proc (since 4.7).
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
