"""Specs that cannot silently void: faults the load can never make manifest, found statically.

Contract: a fault template may declare what its manifestation needs of the load (`exhausts:`, a
database pool that must run out) and what it adds to other faults' needs (`holds:`, requests that
keep their connection longer). For each variant, a fault (not a decoy) that `exhausts` a pool is
checked by Little's law against the calibrated baseline of the variant's load profile (none: nothing
is decided, never another profile's figures): the route's peak demand is
its peak request rate (the spec's load profile: the busiest phase's rate times the route's share
of the mix, requests per real second, which the time scale leaves alone) times how long each
request holds a connection (the baseline's peak p95 latency of the route, an upper bound on the
hold, plus every `holds` of the variant's faults on the same service and route). The load
generator spaces its requests evenly, so a pool at least twice that demand never runs out and
the fault cannot show its symptom: a warning (E0522, a heuristic: a margin of two, not a proof)
at the knob argument, naming the value that would manifest. What this cannot decide is left to
`arenac qualify`, which names a void run's fault, its symptom and the knob (docs/runner.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from arenac.core.diagnostics import Diagnostic
from arenac.core.source import Span
from arenac.core.units import format_seconds
from arenac.model.baseline import Baseline, baseline_file
from arenac.model.library import FaultTemplate, Library, LoadProfile, PoolDemand
from arenac.model.task import ConcreteFault, Scalar, Variant
from arenac.syntax import ast

MARGIN = 2.0  # a pool this many times the demand never runs out under evenly spaced requests

# where a fault's argument was written: (fault name, argument name) -> its span
ArgumentSpans = Callable[[str, str], Span]


@dataclass(frozen=True)
class Demand:
    """A route's peak need for a service's connections (Little's law: rate x hold)."""

    rate_rps: float
    hold_s: float

    @property
    def connections(self) -> float:
        return self.rate_rps * self.hold_s


class VoidCheck:
    """The check for every variant of one compile: the library's templates by qualified name
    (`spine.pool_size`), each load profile's baseline (read once), the spec's argument spans."""

    def __init__(self, library: Library, modules: list[ast.Module]):
        self.library = library
        self.templates = {f"{name}.{t}": template for name, entry in library.substrates.items()
                          for t, template in entry.faults.items()}
        self.baselines: dict[tuple[str, str], Baseline | None] = {}
        self.decls = {task.name.text: task for module in modules for task in module.tasks}

    def warnings(self, variant: Variant, fallback: dict[str, Span]) -> list[Diagnostic]:
        """E0522 for the variant; FALLBACK: a fault's span, for an argument left to its default."""
        baseline = self._baseline(variant.spec.substrate, variant.spec.load.name)
        if baseline is None:
            return []  # a load profile without a calibrated baseline: nothing to decide statically
        decl = self.decls.get(variant.task)
        written = {} if decl is None else _argument_spans(decl)
        return void_warnings(variant, self.templates, baseline,
                             lambda fault, arg: written.get((fault, arg), fallback[fault]))

    def _baseline(self, substrate: str, profile: str) -> Baseline | None:
        if (substrate, profile) not in self.baselines:
            path = self.library.substrates[substrate].directory / baseline_file(profile)
            self.baselines[substrate, profile] = (Baseline.model_validate_json(path.read_bytes()) if path.is_file()
                                                  else None)
        return self.baselines[substrate, profile]


def _argument_spans(task: ast.TaskDecl) -> dict[tuple[str, str], Span]:
    """(fault, argument) -> where its value was written, for the named arguments of the task's faults."""
    return {(stmt.name.text, arg.name.text): arg.alternatives[0].span if len(arg.alternatives) == 1 else arg.span
            for stmt in task.statements if isinstance(stmt, ast.FaultDecl)
            for arg in stmt.call.args if arg.name is not None}


def void_warnings(variant: Variant, templates: dict[str, FaultTemplate], baseline: Baseline,
                  where: ArgumentSpans) -> list[Diagnostic]:
    """E0522 for each fault of the variant whose pool the load never exhausts."""
    found = []
    for fault in variant.faults:
        template = templates.get(fault.template)
        if fault.decoy or template is None or template.exhausts is None:
            continue
        need = template.exhausts
        service, route = _text(need.service, fault.args), _text(need.route, fault.args)
        demand = _demand(variant, templates, baseline, service, route)
        if demand is None:
            continue  # the baseline does not know the route: nothing to decide statically
        capacity = sum(float(fault.args.get(name, 0) or 0) for name in need.capacity)
        if capacity < MARGIN * demand.connections:
            continue
        found.append(Diagnostic(
            "E0522", f"fault '{fault.name}' is not expected to manifest under '{variant.spec.load.name}': at its "
            f"peak, route '{route}' keeps about {demand.connections:.2g} of {service}'s database connections busy "
            f"({demand.rate_rps:.3g} requests/s x {format_seconds(round(demand.hold_s, 3))}, Little's law on the "
            f"substrate's baseline), and a pool of {capacity:g} never runs out",
            where(fault.name, need.knob), _knob_hint(need, fault, capacity, demand), severity="warning"))
    return found


def _demand(variant: Variant, templates: dict[str, FaultTemplate], baseline: Baseline, service: str,
            route: str) -> Demand | None:
    figures = baseline.routes.get(route, {}).get("peak")
    if figures is None or figures.p95_ms is None:
        return None
    held = 0.0
    for other in variant.faults:
        hold = templates[other.template].holds if other.template in templates else None
        if hold is not None and (_text(hold.service, other.args), _text(hold.route, other.args)) == (service, route):
            held += float(_value(hold.seconds, other.args))
    return Demand(rate_rps=_peak_rate(variant.spec.load, route), hold_s=figures.p95_ms / 1000 + held)


def _peak_rate(load: LoadProfile, route: str) -> float:
    """Requests of ROUTE per real second in the profile's busiest phase."""
    total = sum(load.mix.values())
    busiest = max((phase.rate for phase in load.phases), default=0.0)
    return busiest * load.mix.get(route, 0.0) / total if total else 0.0


def _knob_hint(need: PoolDemand, fault: ConcreteFault, capacity: float, demand: Demand) -> str:
    others = capacity - float(fault.args.get(need.knob, 0) or 0)
    below = demand.connections - others  # the knob must stay under this for the pool to run out
    if below <= 1:
        return (f"no `{need.knob}` can make it manifest: each request holds a connection for only about "
                f"{format_seconds(round(demand.hold_s, 3))}; pick a busier route, or add a fault whose template "
                f"`holds` the route's connections longer")
    return f"set `{need.knob}` below {below:.3g}, e.g. `{need.knob}: {max(1, math.floor(below / MARGIN))}`"


def _value(text: str, args: dict[str, Scalar]) -> Scalar:
    """A declaration's string: one `{param}` placeholder is that argument's value, else the literal."""
    if text.startswith("{") and text.endswith("}") and text[1:-1] in args:
        return args[text[1:-1]]
    return text


def _text(text: str, args: dict[str, Scalar]) -> str:
    return str(_value(text, args))


__all__ = ["MARGIN", "ArgumentSpans", "Demand", "VoidCheck", "void_warnings"]
