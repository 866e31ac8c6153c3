"""Expand a `TaskSpec` into its variants: one per cell of the declared matrix.

Dimensions are each fault's layer, each fault argument given with alternatives, and
the access surface. A cell whose oracle cannot be carried out through its access
surface, or whose retrigger challenge has nothing to re-fire, is pruned with the
reason. Variant ids are `<task>-<hash of the coordinates>`: stable under edits that do
not change which cell a variant is.
"""

from __future__ import annotations

import hashlib
import itertools
import json

from arenac.catalog import Library
from arenac.diagnostics import Collector
from arenac.faults import instantiate, touched_targets
from arenac.lower.exprs import ExprContext, lower_predicate
from arenac.model.access import AccessSurface
from arenac.model.gates import SurvivesRetrigger
from arenac.model.task import BoundAction, ConcreteFault, Expansion, PrunedCell, TaskSpec, Variant
from arenac.channels import bind
from arenac.units import parse_quantity


class Pruned(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def variant_id(task: str, coordinates: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps(coordinates, sort_keys=True).encode()).hexdigest()
    return f"{task}-{digest[:8]}"


def dimensions(spec: TaskSpec) -> list[tuple[str, tuple[str, ...]]]:
    dims: list[tuple[str, tuple[str, ...]]] = []
    for fault in spec.faults:
        dims.append((f"{fault.name}.layer", fault.layers))
        for arg, alternatives in fault.args.items():
            if len(alternatives) > 1:
                dims.append((f"{fault.name}.{arg}", tuple(_spell(v) for v in alternatives)))
    dims.append(("access", tuple(s.name for s in spec.access)))
    return dims


def _spell(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expand(spec: TaskSpec, library: Library, errors: Collector) -> Expansion:
    entry = library.substrates[spec.substrate]
    dims = dimensions(spec)
    variants: list[Variant] = []
    pruned: list[PrunedCell] = []
    for cell in itertools.product(*(values for _, values in dims)):
        coordinates = {name: value for (name, _), value in zip(dims, cell)}
        try:
            variants.append(_variant(spec, coordinates, entry, errors))
        except Pruned as reason:
            pruned.append(PrunedCell(task=spec.name, coordinates=coordinates, reason=reason.reason))
    return Expansion(variants=tuple(variants), pruned=tuple(pruned))


def _variant(spec: TaskSpec, coordinates: dict[str, str], entry, errors: Collector) -> Variant:
    substrate = entry.descriptor
    surface: AccessSurface = next(s for s in spec.access if s.name == coordinates["access"])
    retriggered = {f for check in spec.gates.safety if isinstance(check, SurvivesRetrigger) for f in check.faults}
    repaired = {step.target for step in spec.oracle if step.kind == "repair"}
    faults = []
    for fault in spec.faults:
        layer = coordinates[f"{fault.name}.layer"]
        args = {}
        for arg, alternatives in fault.args.items():
            chosen = coordinates.get(f"{fault.name}.{arg}")
            args[arg] = next(v for v in alternatives if _spell(v) == chosen) if chosen is not None else alternatives[0]
        template = entry.faults[fault.template.split(".", 1)[1]]
        recipe, manifest_text = instantiate(template, layer, args)
        bound = []
        if fault.name in repaired:
            for action in recipe.repair:
                channel, reason = bind(action, surface, substrate)
                if channel is None:
                    raise Pruned(f"the repair of fault '{fault.name}' ({layer} layer) {reason}")
                bound.append(BoundAction(action=action, channel=channel))
        retrigger = recipe.retrigger or (recipe.inject if layer == "runtime" else ())
        if fault.name in retriggered and not retrigger:
            raise Pruned(f"fault '{fault.name}' at the {layer} layer has nothing to re-trigger")
        manifest = _manifest(manifest_text, template.name, spec, substrate, errors)
        touches = touched_targets(recipe.repair) + tuple(recipe.touches)
        faults.append(ConcreteFault(
            name=fault.name, template=fault.template, summary=template.summary, layer=layer,
            args=args, onset=fault.onset, recur_after_declare_s=fault.recur_after_declare_s,
            inject=recipe.inject, retrigger=retrigger, repair=tuple(bound), touches=touches,
            manifest=manifest, manifest_within_s=parse_quantity(template.manifest_within).value,
            decoy=fault.decoy,
        ))
    return Variant(task=spec.name, id=variant_id(spec.name, coordinates), coordinates=coordinates, spec=spec,
                   faults=tuple(faults), access=surface)


def _manifest(text: str, template: str, spec: TaskSpec, substrate, errors: Collector):
    """Parse a template's manifestation predicate with the language's own grammar."""
    from arenac.diagnostics import DiagnosticError
    from arenac.source import SourceFile
    from arenac.syntax.parser import parse_comparison

    phases = tuple(p.name for p in spec.load.phases)
    local = Collector()
    try:
        comparison = parse_comparison(SourceFile(f"<manifest of {template}>", text))
    except DiagnosticError as error:
        errors.extend(error.diagnostics)
        raise Pruned(f"fault template '{template}' has an invalid manifestation predicate")
    predicate = lower_predicate(comparison, ExprContext(substrate=substrate, phases=phases, collector=local))
    if predicate is None:
        errors.extend(local.items)
        raise Pruned(f"fault template '{template}' has an invalid manifestation predicate")
    return predicate
