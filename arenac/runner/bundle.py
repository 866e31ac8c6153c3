"""Open a compiled bundle for running: refuse one that fails its manifest, read its plan."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from arenac.bundle import verify_bundle
from arenac.model.plan import Plan


class BundleRefused(Exception):
    """The bundle is not what its manifest says; nothing was run."""


@dataclass(frozen=True)
class RunnableBundle:
    directory: Path
    plan: Plan

    @property
    def solve_script(self) -> Path:
        return self.directory / "oracle" / "solve.sh"

    @property
    def instruction(self) -> Path:
        return self.directory / "instruction.md"

    @property
    def gates_file(self) -> Path:
        return self.directory / "verifier" / "gates.json"


def open_bundle(directory: Path) -> RunnableBundle:
    check = verify_bundle(directory)
    if not check.ok:
        problems = ([check.problem] if check.problem else []) + [f"altered: {p}" for p in check.altered] + [
            f"missing: {p}" for p in check.missing] + [f"not in manifest: {p}" for p in check.unexpected]
        raise BundleRefused(f"{directory}: " + "; ".join(problems))
    plan = Plan.model_validate_json((directory / "plan.json").read_text(encoding="utf-8"))
    return RunnableBundle(directory, plan)
