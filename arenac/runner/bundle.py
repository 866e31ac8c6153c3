"""Open a compiled bundle for running: refuse one that fails its manifest, pin what grading uses.

Contract: `open_bundle(dir)` checks the bundle against its manifest and reads, once, the files the
episode and its grader depend on (plan.json, verifier/gates.json, oracle/solve.sh,
instruction.md, and the agent's RBAC objects rbac/*.yaml, which the broker enforces); each read's
sha256 must be the manifest's, so what is pinned is exactly what was
checked. The episode never re-reads them from the bundle: the grader grades with the pinned gates,
the oracle runs the pinned script, and the verdict records the digests. Editing the bundle after
it was opened changes nothing the episode does. A refused bundle's `BundleRefused` names every
difference as `arenac verify-bundle` does (`BundleCheck.findings`, mode changes included), then
any pinned file missing from the manifest or altered while it was read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from arenac.bundle import MANIFEST, sha256, verify_bundle
from arenac.model.plan import Plan

PINNED = ("plan.json", "verifier/gates.json", "oracle/solve.sh", "instruction.md")


class BundleRefused(Exception):
    """The bundle is not what its manifest says; nothing was run."""


@dataclass(frozen=True)
class RunnableBundle:
    directory: Path
    plan: Plan
    pinned: dict[str, bytes]  # bundle-relative path -> the bytes checked against the manifest
    bundle_digest: str

    @property
    def solve_script(self) -> Path:
        """Where the oracle's script lies in the bundle (what runs is `solve_script_bytes`)."""
        return self.directory / "oracle" / "solve.sh"

    @property
    def gates_bytes(self) -> bytes:
        return self.pinned["verifier/gates.json"]

    @property
    def solve_script_bytes(self) -> bytes:
        return self.pinned["oracle/solve.sh"]

    @property
    def instruction_bytes(self) -> bytes:
        return self.pinned["instruction.md"]

    @property
    def rbac_bytes(self) -> list[bytes]:
        """The agent's RBAC objects (rbac/*.yaml) as pinned, in path order."""
        return [data for path, data in sorted(self.pinned.items()) if path.startswith("rbac/")]

    def digests(self) -> dict[str, str]:
        """sha256 of every pinned file, and the manifest's bundle digest (what the verdict records)."""
        pinned = {path: sha256(data) for path, data in sorted(self.pinned.items())}
        return {"bundle_digest": self.bundle_digest, **pinned}


def open_bundle(directory: Path) -> RunnableBundle:
    pinned: dict[str, bytes] = {}
    wanted = list(PINNED) + sorted(p.relative_to(directory).as_posix() for p in (directory / "rbac").glob("*.yaml"))
    for path in wanted:
        try:
            pinned[path] = (directory / path).read_bytes()
        except OSError:
            pass  # reported below as missing
    check = verify_bundle(directory)
    problems = check.findings()  # the wording `arenac verify-bundle` prints
    manifest: dict = {}
    if not problems:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        listed = {a["path"]: a["sha256"] for a in manifest["artefacts"]}
        for path in wanted:
            if path not in pinned or path not in listed:
                problems.append(f"missing: {path}")
            elif sha256(pinned[path]) != listed[path]:
                problems.append(f"altered while being opened: {path}")
    if problems:
        raise BundleRefused(f"{directory}: " + "; ".join(problems))
    plan = Plan.model_validate_json(pinned["plan.json"].decode("utf-8"))
    return RunnableBundle(directory, plan, pinned, str(manifest.get("bundle_digest", "")))
