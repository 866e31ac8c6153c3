"""The standard library as data: fault templates, load profiles, and each substrate's entry.

Contract: everything here is plain typed data, free of syntax. `arenac.lower.library` reads
and lowers the library's files into a `Library`; every later phase (expansion, checks,
rendering, writing) and the substrate tooling read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from arenac.core.source import SourceFile
from arenac.model.access import AccessSurface
from arenac.model.actions import HARNESS_ONLY, Action, Target
from arenac.model.base import Model
from arenac.model.substrate import Substrate

Layer = Literal["config", "runtime", "image"]
LAYERS: tuple[str, ...] = ("config", "runtime", "image")


class Param(Model):
    """A template parameter. Two fields tie a parameter to what the descriptor says the substrate
    does (lower/faults.py checks them, E0215): `event` on a `service` parameter asks that the service
    have that admin event (a template that switches it on cannot work elsewhere); `follows` on a
    `route` parameter names the parameter the route follows, by default the first route it names:
    such a service parameter (a route the service's event acts on: the descriptor's
    `event_routes`), or a `privilege` parameter (a route whose every request needs that privilege
    on the template's one `table` parameter: the descriptor's `routes[].privileges`)."""

    name: str
    type: Literal["service", "int", "duration", "size", "fraction", "string", "event", "release", "table", "role",
                  "route", "privilege"]
    default: str | int | float | None = None
    min: float | None = None
    max: float | None = None
    event: str | None = None
    follows: str | None = None
    why: str | None = None  # why the range is what it is: E0308's hint adds it

    @model_validator(mode="after")
    def _ties_fit_the_type(self) -> Param:
        if self.event is not None and self.type != "service":
            raise ValueError(f"parameter '{self.name}': `event` applies to a service parameter")
        if self.follows is not None and (self.type != "route" or self.default is not None):
            raise ValueError(f"parameter '{self.name}': `follows` applies to a route parameter without a default")
        return self


class LayerRecipe(Model):
    """How one layer of a fault is injected, repaired, re-triggered and proven."""

    inject: tuple[Action, ...]
    repair: tuple[Action, ...]
    retrigger: tuple[Action, ...] = ()  # defaults to inject when empty
    touches: tuple[Target, ...] = ()  # what the repair changes beyond what its actions imply

    @field_validator("repair")
    @classmethod
    def _repairs_are_agent_actions(cls, repair: tuple[Action, ...]) -> tuple[Action, ...]:
        for action in repair:
            if isinstance(action, HARNESS_ONLY):
                raise ValueError(f"a repair cannot use a '{action.kind}' action (only the harness performs those)")
        return repair


class PoolDemand(Model):
    """`exhausts:` the fault shows only when the route's requests need more of the service's
    database connections at once than the pool holds (the sum of the `capacity` arguments).
    Strings are a literal or one `{param}` placeholder; `knob` names the argument to move."""

    service: str
    route: str
    capacity: tuple[str, ...]  # argument names, summed
    knob: str


class ConnectionHold(Model):
    """`holds:` while the fault is on, each request of the route holds a connection of the
    service this much longer (a duration argument's `{param}`, or seconds as a literal)."""

    service: str
    route: str
    seconds: str


class FaultTemplate(Model):
    """A fault template as written in library YAML; strings hold `{param}` placeholders."""

    name: str
    substrate: str
    summary: str
    params: tuple[Param, ...]
    layers: dict[str, LayerRecipe]
    manifest: str  # a predicate in the .arena language, proving the fault took effect
    manifest_within: str = "30s"
    durable_in: tuple[str, ...] = Field(default=())  # layers whose fault survives a restart
    exhausts: PoolDemand | None = None  # what the manifestation needs of the load (checks/voids.py)
    holds: ConnectionHold | None = None  # what the fault adds to other faults' pool demand

    @model_validator(mode="after")
    def _follows_an_event_service_or_a_privilege(self) -> FaultTemplate:
        params = {p.name: p for p in self.params}
        tables = [p.name for p in self.params if p.type == "table"]
        for param in self.params:
            followed = params.get(param.follows or "")
            if param.follows is None or (followed is not None and followed.event is not None):
                continue
            if followed is None or followed.type != "privilege":
                raise ValueError(f"parameter '{param.name}' follows '{param.follows}', which is not a service "
                                 "parameter with an `event` nor a privilege parameter")
            if len(tables) != 1:
                raise ValueError(f"parameter '{param.name}' follows the privilege '{param.follows}', which needs "
                                 f"the template to have one table parameter (it has {len(tables)})")
        return self

    def followed_table(self) -> str:
        """The name of the one `table` parameter a privilege applies to (a route following a privilege)."""
        return next(p.name for p in self.params if p.type == "table")


class Phase(Model):
    name: str
    duration_s: float
    rate: float


class LoadProfile(Model):
    name: str
    warmup: Phase | None
    phases: tuple[Phase, ...]
    mix: dict[str, float]

    @property
    def cycle_s(self) -> float:
        return sum(p.duration_s for p in self.phases)


@dataclass(frozen=True)
class SubstrateEntry:
    """One substrate of the library: its descriptor, its folder, its fault templates, and the
    access surfaces and load profiles its modules define (already lowered)."""

    descriptor: Substrate
    directory: Path
    faults: dict[str, FaultTemplate]
    access: dict[str, AccessSurface]
    loads: dict[str, LoadProfile]
    # its calibrated baselines (baselines/PROFILE.json, one per calibrated load profile): profile ->
    # the routes it has figures for; a profile missing here was never calibrated
    baselines: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def chart_dir(self) -> Path:
        return self.directory / self.descriptor.chart


@dataclass(frozen=True)
class Library:
    """The loaded library: its substrates by name, and the text of its .arena modules (for
    diagnostics that point into the library)."""

    root: Path
    substrates: dict[str, SubstrateEntry]
    sources: dict[str, SourceFile]

    def relative(self, path: Path) -> str:
        """How artefacts and messages name a library file: `library/...`, never an absolute path."""
        return "library/" + path.relative_to(self.root).as_posix()
