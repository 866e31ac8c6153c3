"""Source text and positions.

A `SourceFile` is the text of one spec plus the name it is shown under (always
relative or as given by the user, never made absolute). A `Span` points at a run of
characters in it, 1-based like every compiler's diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, file: str, line: int, column: int, width: int = 1) -> Span:
        return cls(file, line, column, line, column + max(width, 1))


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str
    _lines: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def read(cls, path: Path, display_name: str | None = None) -> SourceFile:
        text = path.read_text(encoding="utf-8")
        return cls(display_name or str(path), text)

    def line(self, number: int) -> str:
        if not self._lines:
            self._lines.extend(self.text.splitlines())
        if 1 <= number <= len(self._lines):
            return self._lines[number - 1]
        return ""
