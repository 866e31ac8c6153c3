"""Lower load profiles: a warmup, then phases that repeat as one cycle, and a mix."""

from __future__ import annotations

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.units import Dimension
from arenac.model.library import LoadProfile, Phase
from arenac.model.substrate import Substrate
from arenac.syntax import ast


def lower_load(defn: ast.LoadDef, substrate: Substrate, errors: Collector) -> LoadProfile | None:
    before = len(errors.items)
    phases = []
    seen: set[str] = set()
    for decl in ([defn.warmup] if defn.warmup else []) + list(defn.phases):
        if decl.name.text in seen:
            errors.error("E0208", f"phase '{decl.name.text}' is declared twice", decl.name.span)
        seen.add(decl.name.text)
        if decl.duration.quantity.dimension != Dimension.duration:
            errors.error("E0302", f"a phase lasts a duration, not '{decl.duration.quantity.text}'", decl.duration.span,
                         "e.g. 30s")
        elif decl.duration.quantity.value <= 0:  # a cycle of empty phases never ends a soak
            errors.error("E0307", f"a phase must last longer than 0s, not {decl.duration.quantity.text}",
                         decl.duration.span, "e.g. 30s")
        if decl.rate.quantity.dimension != Dimension.rate:
            errors.error("E0302", f"a phase runs at a rate, not '{decl.rate.quantity.text}'", decl.rate.span,
                         "e.g. 40/s")
        phases.append(Phase(name=decl.name.text, duration_s=decl.duration.quantity.value,
                            rate=decl.rate.quantity.value))
    if not defn.phases:
        errors.error("E0206", f"load profile '{defn.name.text}' has no phases", defn.span,
                     "add e.g. `phase peak = 30s at 60/s`")
    routes = [r.name for r in substrate.routes]
    mix: dict[str, float] = {}
    for entry in defn.mix:
        if entry.route.text not in routes:
            errors.error("E0203", f"unknown route '{entry.route.text}'", entry.route.span,
                         did_you_mean(entry.route.text, routes))
        elif entry.weight.value <= 0:
            errors.error("E0307", "a mix weight must be positive", entry.weight.span)
        else:
            mix[entry.route.text] = entry.weight.value
    if not defn.mix:
        errors.error("E0206", f"load profile '{defn.name.text}' has no request mix", defn.span,
                     "add e.g. `mix send = 40, read = 60`")
    if len(errors.items) > before:
        return None
    warmup = phases[0] if defn.warmup else None
    cycle = tuple(phases[1:] if defn.warmup else phases)
    return LoadProfile(name=defn.name.text, warmup=warmup, phases=cycle, mix=dict(sorted(mix.items())))
