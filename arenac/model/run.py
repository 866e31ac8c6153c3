"""run.json (docs/evidence.md): which episode a run directory holds. Written by
arenac/runner/records.py (begin_run, then finish_run with the wall time), read by a resumed
qualification (arenac/runner/resume.py) before it reuses the run."""

from __future__ import annotations

from typing import Literal

from arenac.model.record import Record


class RunRecord(Record):
    """run.json: which episode a run directory holds (what a resumed qualification must match
    before it reuses the run: resume.py) and, once the episode finished, its wall time."""

    format: Literal[1] = 1
    task: str
    variant: str
    bundle_digest: str  # the manifest's digest over every artefact of the bundle
    agent: str  # as given: oracle, noop, adversary:NAME, cmd:...
    inject_faults: bool  # False: the healthy control
    time_scale: float
    # where it ran: a resumed qualification or campaign reuses a run only on the same backend
    # ("local" in run directories written before it was recorded)
    backend: Literal["local", "kubernetes"] = "local"
    wall_s: float | None = None  # real seconds the episode took; None until it finished
    # what the variant is, so a lone run directory can be reported on (arenac report) without its
    # bundle; None in run directories written before these were recorded
    substrate: str | None = None
    access: str | None = None  # the access profile's name
    faults: dict[str, str] | None = None  # fault name -> the layer this variant injects it at
