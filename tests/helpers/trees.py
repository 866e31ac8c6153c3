"""A directory as `{relative POSIX path: (bytes, permission bits)}`: how the tests compare bundle
trees (two trees are the same bundle output exactly when these mappings are equal)."""

from __future__ import annotations

from pathlib import Path


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(root.rglob("*")) if p.is_file()}
