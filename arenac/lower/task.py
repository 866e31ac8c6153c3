"""Lower one task declaration into a `TaskSpec`.

Resolution order for unqualified names: definitions in the spec file itself, then the
task's substrate namespace, then modules brought in with `use`. Every problem in the
task is collected; the caller raises them together. This module reads the settings, builds
the namespace and picks the access surfaces; the faults (lower/faults.py), the gates
(lower/gates.py), the oracle (lower/oracle.py) and the healthy stack's settings
(lower/healthy.py) are lowered by their own modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenac.core.diagnostics import Collector, did_you_mean
from arenac.core.units import Dimension
from arenac.lower.access import lower_access
from arenac.lower.exprs import ExprContext, require_positive
from arenac.lower.faults import lower_faults
from arenac.lower.gates import GateLowering
from arenac.lower.healthy import lower_healthy
from arenac.lower.library import LibraryMacros, Namespace
from arenac.lower.load import lower_load
from arenac.lower.macro_repeats import merge_macro_repeats
from arenac.lower.oracle import lower_oracle
from arenac.lower.source_map import SourceMap
from arenac.model.access import AccessSurface
from arenac.model.library import Library, SubstrateEntry
from arenac.model.substrate import Substrate
from arenac.model.task import TaskSpec
from arenac.syntax import ast
from arenac.syntax.unparse import value_text

SETTINGS = ("title", "instruction", "substrate", "load", "window", "soak")
DEFAULT_WINDOW_S = 600.0
DEFAULT_SOAK_S = 120.0


@dataclass(frozen=True)
class LoweredTask:
    """A task's IR, the descriptor of the substrate it runs on, and where its parts were
    written, for the later checks to point at."""

    spec: TaskSpec
    substrate: Substrate
    spans: SourceMap


def lower_task(task: ast.TaskDecl, module: ast.Module, library: Library, macros: LibraryMacros,
               errors: Collector) -> LoweredTask | None:
    before = len(errors.items)
    settings = _settings(task, errors)
    spans = SourceMap(task=task.name.span, settings={key: value.span for key, value in settings.items()})
    substrate_ref = settings.get("substrate")
    if substrate_ref is None:
        errors.error("E0206", f"task '{task.name.text}' names no substrate", task.name.span, "add `substrate = spine`")
        return None
    substrate_name = _text(substrate_ref)
    entry = library.substrates.get(substrate_name)
    if entry is None:
        errors.error("E0202", f"unknown substrate '{substrate_name}'", substrate_ref.span,
                     did_you_mean(substrate_name, library.substrates))
        return None
    substrate = entry.descriptor
    namespace = _namespace(task, module, library, macros, entry, errors)

    title = _string(settings, "title", task, errors)
    instruction = _string(settings, "instruction", task, errors)
    load = _resolve(settings.get("load"), "load profile", namespace.loads, errors, default="standard",
                    substrate=substrate_name, span=task.name.span)
    window_s = _duration(settings.get("window"), DEFAULT_WINDOW_S, errors, "the agent window")
    soak_s = _duration(settings.get("soak"), DEFAULT_SOAK_S, errors, "the soak")
    phases = tuple(p.name for p in load.phases) + ((load.warmup.name,) if load.warmup else ()) if load else ()
    profiles_with = {route.name: tuple(sorted(name for name, profile in namespace.loads.items()
                                              if route.name in profile.mix)) for route in substrate.routes}
    ctx = ExprContext(substrate=substrate, phases=phases, collector=errors,
                      mix=tuple(load.mix) if load else None, load=load.name if load else "",
                      profiles_with=profiles_with,
                      baseline_routes=entry.baselines.get(load.name, ()) if load else None,
                      calibrated=load is None or load.name in entry.baselines)

    faults, fault_names = lower_faults(task, entry.faults, substrate_name, ctx, spans)
    fault_decls = [s for s in task.statements if isinstance(s, ast.FaultDecl)]
    decoys = {decl.name.text for decl in fault_decls if decl.decoy}

    access = _access_choice(task, namespace, errors, spans)
    before_gates = len(errors.items)
    gates = GateLowering(ctx, namespace.macros, fault_names, spans).lower(
        [s for s in task.statements if isinstance(s, ast.GateDecl)], task.name.span)
    errors.items[before_gates:] = merge_macro_repeats(errors.items[before_gates:], namespace.macros)
    oracle = lower_oracle(task, fault_decls, fault_names, decoys, errors, spans)
    healthy = lower_healthy(task, entry, ctx, spans)
    if len(errors.items) > before or load is None or gates is None:
        return None
    spec = TaskSpec(
        name=task.name.text, source=module.file, title=title, instruction=instruction, substrate=substrate_name,
        load=load, window_s=window_s, soak_s=soak_s, faults=tuple(faults), access=tuple(access), gates=gates,
        oracle=tuple(oracle), healthy=healthy,
    )
    return LoweredTask(spec, substrate, spans)


def _settings(task: ast.TaskDecl, errors: Collector) -> dict[str, ast.Value]:
    found: dict[str, ast.Value] = {}
    for stmt in task.statements:
        if not isinstance(stmt, ast.Setting):
            continue
        key = stmt.key.text
        if key not in SETTINGS:
            errors.error("E0201", f"unknown setting '{key}'", stmt.key.span,
                         did_you_mean(key, SETTINGS) or f"settings are: {', '.join(SETTINGS)}")
        elif key in found:
            errors.error("E0208", f"setting '{key}' is given twice", stmt.key.span)
        else:
            if len(stmt.alternatives) > 1:
                errors.error("E0401", f"'{key}' takes one value; only layer, access and fault arguments have "
                             "alternatives", stmt.alternatives[1].span)
            found[key] = stmt.alternatives[0]  # even after E0401: the setting is there, not missing
    return found


def _namespace(task: ast.TaskDecl, module: ast.Module, library: Library, macros: LibraryMacros,
               entry: SubstrateEntry, errors: Collector) -> Namespace:
    """Local definitions shadow used modules, which shadow the substrate's."""
    own = entry.descriptor.name
    ns = Namespace(dict(entry.access), dict(entry.loads), dict(macros.substrates[own]))
    uses = list(module.uses) + [s for s in task.statements if isinstance(s, ast.Use)]
    for use in uses:
        name = use.path.text
        if name in library.substrates:
            other = library.substrates[name]
            ns.access.update(other.access), ns.loads.update(other.loads), ns.macros.update(macros.substrates[name])
        elif name in macros.modules:
            ns.macros.update(macros.modules[name])
        else:
            errors.error("E0202", f"unknown library module '{name}'", use.path.span,
                         did_you_mean(name, list(library.substrates) + list(macros.modules)))
    entry_substrate = entry.descriptor
    for defn in module.access_defs + tuple(s for s in task.statements if isinstance(s, ast.AccessDef)):
        surface = lower_access(defn, entry_substrate, errors)
        if surface is not None:
            ns.access[surface.name] = surface
        else:  # already reported; do not report its uses as unknown too
            ns.broken.add(defn.name.text)
    for load_def in module.loads:
        profile = lower_load(load_def, entry_substrate, errors)
        if profile is not None:
            ns.loads[profile.name] = profile
    ns.macros.update({m.name.text: m for m in module.macros})
    return ns


def _resolve(value, what: str, table: dict, errors: Collector, default: str, substrate: str, span):
    if value is None:
        if default in table:
            return table[default]
        errors.error("E0206", f"no {what} given and no default '{default}'", span)
        return None
    name = _text(value)
    if not isinstance(value, ast.Ref):
        errors.error("E0305", f"{what} is a name, not '{name}'", value.span)
        return None
    short = name[len(substrate) + 1:] if name.startswith(substrate + ".") else name
    if short not in table:
        errors.error("E0202", f"unknown {what} '{name}'", value.span, did_you_mean(short, table))
        return None
    return table[short]


def _string(settings, key: str, task: ast.TaskDecl, errors: Collector) -> str:
    value = settings.get(key)
    if value is None:
        errors.error("E0206", f"task '{task.name.text}' has no {key}", task.name.span, f'add `{key} = "..."`')
        return ""
    if not isinstance(value, ast.StringLit):
        errors.error("E0305", f"{key} is a string", value.span, f'write `{key} = "..."`')
        return ""
    if not value.value.strip():
        errors.error("E0307", f"{key} is empty", value.span)
    return value.value


def _duration(value, default: float, errors: Collector, what: str) -> float:
    """A positive duration setting (window, soak), or its default when absent or in error."""
    if value is None:
        return default
    if not isinstance(value, ast.QuantityLit) or value.quantity.dimension != Dimension.duration:
        errors.error("E0302", f"expected a duration, found '{_text(value)}'", value.span, "e.g. 10m or 90s")
        return default
    if not require_positive(value, what, errors):
        return default
    return value.quantity.value


def _text(value) -> str:
    return value_text(value)


# ---- access --------------------------------------------------------------------------


def _access_choice(task: ast.TaskDecl, namespace: Namespace, errors: Collector,
                   spans: SourceMap) -> list[AccessSurface]:
    choices = [s for s in task.statements if isinstance(s, ast.AccessChoice)]
    if not choices:
        errors.error("E0206", f"task '{task.name.text}' has no access surface", task.name.span,
                     f"add e.g. `access = {' | '.join(sorted(namespace.access)[:3])}`")
        return []
    for extra in choices[1:]:
        errors.error("E0208", "access is given twice", extra.span)
    surfaces: list[AccessSurface] = []
    for value in choices[0].alternatives:
        name = _text(value)
        short = name.split(".")[-1]
        if short in namespace.broken:
            continue
        if not isinstance(value, ast.Ref) or short not in namespace.access:
            errors.error("E0202", f"unknown access surface '{name}'", value.span, did_you_mean(short, namespace.access))
            continue
        if any(s.name == short for s in surfaces):
            errors.error("E0208", f"access surface '{short}' is listed twice", value.span)
            continue
        spans.access[short] = value.span
        surfaces.append(namespace.access[short])
    return surfaces
