"""The variant matrix as rows, for `arenac variants` (table or JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arenac.pipeline import Compilation


@dataclass(frozen=True)
class MatrixRow:
    task: str
    variant: str | None  # None for a pruned cell
    coordinates: dict[str, str]
    reason: str | None

    def as_dict(self) -> dict:
        return {"task": self.task, "variant": self.variant, "coordinates": self.coordinates,
                "status": "pruned" if self.variant is None else "built", "reason": self.reason}


def matrix_rows(compilation: Compilation) -> list[MatrixRow]:
    rows = []
    for task in compilation.tasks:
        for variant in task.variants:
            rows.append(MatrixRow(variant.task, variant.id, dict(variant.coordinates), None))
        for cell in task.pruned:
            rows.append(MatrixRow(cell.task, None, dict(cell.coordinates), cell.reason))
    return rows


def render_matrix(rows: list[MatrixRow]) -> str:
    header = ["task", "variant", "cell", "status"]
    table = [[r.task, r.variant or "-", ", ".join(f"{k}={v}" for k, v in r.coordinates.items()),
              "built" if r.variant else f"pruned: {r.reason}"] for r in rows]
    widths = [max(len(header[i]), *(len(row[i]) for row in table)) if table else len(header[i]) for i in range(3)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header[:3], widths, strict=True)) + "  " + header[3]]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    built = sum(1 for r in rows if r.variant)
    lines.append(f"{built} variant(s) built, {len(rows) - built} pruned")
    return "\n".join(lines)
