"""The typed IR of a task: `TaskSpec` (with alternatives) and `Variant` (one cell).

`TaskSpec` is what lowering produces from a spec: every name resolved, every quantity
normalised, alternatives still open. `arenac.variants.cells` turns it into `Variant`s, each with one
choice per dimension and every action bound to the channel the access surface allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from arenac.model.access import AccessSurface, Channel
from arenac.model.actions import Action, Target
from arenac.model.base import Model
from arenac.model.gates import Gates, Predicate
from arenac.model.library import LoadProfile
from arenac.model.substrate import Service

Scalar = str | int | float


class Onset(Model):
    """When a fault fires. `after_s` is from the fault phase's start for `after`, and from the
    agent's start for `in_window` (`after agent start + D`: in the agent's window, or at its
    declaration if that comes first)."""

    kind: Literal["at_start", "after", "in_window", "every", "when"]
    after_s: float = 0.0
    every_s: float | None = None
    offset_s: float | None = None
    duration_s: float | None = None
    when: Predicate | None = None

    @property
    def latest_start_s(self) -> float:
        """When, after the fault phase's start, the fault has fired at least once at the latest
        (an `in_window` fault fires after the agent's start: 0 here, checks/timing.py checks it)."""
        if self.kind == "after":
            return self.after_s
        if self.kind == "every":
            return self.offset_s or 0.0
        return 0.0


class FaultSpec(Model):
    name: str
    template: str
    args: dict[str, tuple[Scalar, ...]]  # alternatives per argument
    layers: tuple[str, ...]
    onset: Onset
    recur_after_declare_s: float | None = None
    decoy: bool = False  # injected but not the cause: no manifestation check, never repaired


class OracleStep(Model):
    kind: Literal["repair", "wait_until", "wait_for", "declare"]
    target: str | None = None
    duration_s: float | None = None


class HealthySetting(Model):
    """A value the task gives its substrate's configuration when healthy (`healthy { config(S.K) =
    V }`): in the chart values of every variant and of the healthy control alike, from install on.
    `values_path` is where the substrate chart's values hold it (lower/healthy.py derives it from
    the chart's own values: `services.message.config.DB_POOL_SIZE`, `redis.appendonly`); `value`
    is the ConfigMap's string (a quantity in the key's own unit)."""

    service: str
    key: str
    value: str
    values_path: str

    @property
    def ref(self) -> str:
        return f"{self.service}.{self.key}"


class TaskSpec(Model):
    name: str
    source: str  # the spec's path as given (relative), for messages and the manifest
    title: str
    instruction: str
    substrate: str
    load: LoadProfile
    window_s: float
    soak_s: float
    faults: tuple[FaultSpec, ...]
    access: tuple[AccessSurface, ...]
    gates: Gates
    oracle: tuple[OracleStep, ...]
    healthy: tuple[HealthySetting, ...] = ()  # the `healthy { }` block's settings, in their order

    @model_serializer(mode="wrap")
    def _without_empty_healthy(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """A task without a `healthy` block serialises as it did before the block existed, so its
        variant ids (variants.py hashes this dump) and the goldens' ir.json keep their bytes."""
        data = handler(self)
        if isinstance(data, dict) and not self.healthy:
            data.pop("healthy", None)
        return data

    def healthy_config(self, service: Service) -> dict[str, str]:
        """SERVICE's config when healthy in this task: the descriptor's healthy values with the
        task's own settings over them."""
        own = {s.key: s.value for s in self.healthy if s.service == service.name}
        return {**service.config, **own}


class BoundAction(Model):
    """An action with the channel that carries it out in this variant."""

    action: Action
    channel: Channel


class ConcreteFault(Model):
    name: str
    template: str
    summary: str
    layer: str
    args: dict[str, Scalar]
    onset: Onset
    recur_after_declare_s: float | None = None
    inject: tuple[Action, ...]
    retrigger: tuple[Action, ...]
    repair: tuple[BoundAction, ...]
    touches: tuple[Target, ...]
    manifest: Predicate
    manifest_within_s: float
    decoy: bool = False

    @property
    def fires_in_window(self) -> bool:
        """A cause (not a decoy) fired at run time in the agent's window (`after agent start + D`):
        the oracle must wait for it before repairing it (E0527), and fix-now keeps those waits."""
        return self.onset.kind == "in_window" and self.layer == "runtime" and not self.decoy


def waits_before_repair(oracle: Sequence[OracleStep], fault: str) -> tuple[int, ...]:
    """The indices of the oracle's fixed waits (`wait D`; `wait until healthy` may return at once and
    is not one) before its first `repair FAULT` (every one of them when it never repairs it)."""
    waits = []
    for index, step in enumerate(oracle):
        if step.kind == "repair" and step.target == fault:
            break
        if step.kind == "wait_for":
            waits.append(index)
    return tuple(waits)


def cell_words(coordinates: dict[str, str]) -> str:
    """A cell of the matrix as messages and tables name it: `pool.layer=config, access=shell`."""
    return ", ".join(f"{name}={value}" for name, value in coordinates.items())


class Variant(Model):
    task: str
    id: str
    coordinates: dict[str, str]
    spec: TaskSpec
    faults: tuple[ConcreteFault, ...]
    access: AccessSurface


class VariantCell(Model):
    """A built cell of the matrix as the compiler lists it. The `Variant` itself is not kept:
    it is rebuilt from the spec when its bundle is rendered, so memory does not grow with the
    matrix."""

    task: str
    id: str
    coordinates: dict[str, str]
    access: str


class PrunedCell(Model):
    task: str
    coordinates: dict[str, str]
    reason: str
