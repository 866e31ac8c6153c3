"""plan.json: the runner's input, versioned and described by a JSON Schema.

It carries only what a chart cannot: the timeline, onsets, runtime injections,
manifestation checks, challenges, the access surface the brokers enforce, and the
gates. The substrate's configuration (including config-layer faults and releases)
lives in the bundle's chart.
"""

from __future__ import annotations

from typing import Final, Literal

from arenac.model.access import AccessSurface
from arenac.model.actions import Action
from arenac.model.base import Model
from arenac.model.gates import Gates, Predicate
from arenac.model.library import LoadProfile
from arenac.model.task import Onset

PLAN_SCHEMA_VERSION: Final = "arenac.plan/v1"
# the bundle file that holds a task's `healthy { }` settings in the substrate chart's own shape,
# beside the chart's overlay (arenac/render/chart.py writes it, for such a task only): what the
# healthy control installs the substrate chart with
HEALTHY_VALUES: Final = "chart/healthy-values.yaml"
# read-only brokered tools on every agent's PATH, whatever its access surface (a plan lists them)
# every tool the broker serves (broker/tools.py decides each call); a plan grants some of them
BROKERED_TOOLS: Final = ("kubectl", "admin-api", "db-sql", "wait-until-healthy", "time-left", "declare_repair_complete")
EVERY_AGENT_TOOLS: Final = ("time-left", "wait-until-healthy")


class Timeline(Model):
    """Durations in plan seconds; the runner may compress them all by one time scale."""

    warmup_s: float
    agent_window_s: float
    soak_s: float
    cycle_s: float


class PlannedFault(Model):
    name: str
    template: str
    layer: str
    onset: Onset
    recur_after_declare_s: float | None
    inject: tuple[Action, ...]  # runtime actions only: config/image layers live in the chart
    retrigger: tuple[Action, ...]
    manifest: Predicate
    manifest_within_s: float
    decoy: bool = False  # injected on its onset; its manifestation is not awaited


class Challenges(Model):
    restart: tuple[str, ...]
    retrigger: tuple[str, ...]


class SnapshotSpec(Model):
    """What the runner snapshots at baseline, declaration, after restart and at soak end."""

    config: tuple[str, ...]  # service names
    tables: tuple[str, ...]
    sequences: tuple[str, ...]


class Plan(Model):
    schema_version: Literal["arenac.plan/v1"] = PLAN_SCHEMA_VERSION
    task: str
    variant: str
    coordinates: dict[str, str]
    substrate: str
    chart: str  # path of the chart inside the bundle
    values_key: str  # where the substrate's values sit in the bundle chart
    timeline: Timeline
    load: LoadProfile
    faults: tuple[PlannedFault, ...]
    access: AccessSurface
    challenges: Challenges
    snapshots: SnapshotSpec
    gates: Gates
    tools: tuple[str, ...]  # the access tools the agent gets on PATH


def brokered_tools(plan: Plan) -> tuple[str, ...]:
    """The brokered commands on the agent's PATH (with the scaled `sleep`): the plan's, and the
    read-only ones every agent gets, also from a bundle compiled before the plan listed them (the
    oracle waits with wait-until-healthy; time-left is the agent's clock). The runner's broker
    serves them; an export to Harbor bakes their clients into the agent's image."""
    return tuple(sorted(set(plan.tools) | set(EVERY_AGENT_TOOLS)))
