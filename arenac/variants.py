"""Expand a `TaskSpec` into its variants: one per cell of the declared matrix.

Dimensions are each fault's layer, each fault argument given with alternatives, and
the access surface. A cell whose oracle cannot be carried out through its access
surface, or whose retrigger challenge has nothing to re-fire, is pruned with the
reason. Cells are produced one at a time (`cells`), so a caller can check or render a
variant and let it go: nothing here grows with the size of the matrix.

Variant ids are `<task>-<short content hash>`: the first 8 hex digits of the sha256 of the
variant's own definition (its chosen faults with their resolved inject/repair actions and
manifestation, its access surface, gates, oracle, load, timeline, title and instruction) and
of the substrate's chart. Edits that do not change a variant (comments, formatting, order,
another cell's alternatives, the spec's file name) keep its id; any edit that changes what
the variant is gives it a new one, so records keyed by id never match a different task.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arenac.channels import bind
from arenac.core.diagnostics import Collector, DiagnosticError
from arenac.core.source import SourceFile
from arenac.core.units import Dimension, format_quantity, parse_quantity
from arenac.faults import instantiate
from arenac.lower.exprs import ExprContext, lower_predicate
from arenac.lower.faults import PARAM_DIMENSIONS
from arenac.model.access import AccessSurface
from arenac.model.actions import SendBurstAction, touched_targets
from arenac.model.gates import Predicate, SurvivesRetrigger
from arenac.model.library import Library, SubstrateEntry
from arenac.model.substrate import Substrate
from arenac.model.task import BoundAction, ConcreteFault, PrunedCell, TaskSpec, Variant
from arenac.syntax import ast
from arenac.syntax.parser import parse_comparison


class Pruned(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# Parts of a variant that are not its content: the id itself, and what the spec holds for
# every cell (all alternatives of faults and access) or only names the file it came from.
_NOT_CONTENT: dict[str, Any] = {"id": True, "spec": {"faults": True, "access": True, "source": True}}
_ID_PLACEHOLDER = "-"


def variant_id(variant: Variant, chart_digest: str) -> str:
    """`<task>-<8 hex>` over the variant's definition and the substrate chart (see module doc)."""
    content = variant.model_dump(mode="json", exclude=_NOT_CONTENT)
    data = json.dumps({"variant": content, "chart": chart_digest}, sort_keys=True, ensure_ascii=False)
    return f"{variant.task}-{hashlib.sha256(data.encode('utf-8')).hexdigest()[:8]}"


@functools.lru_cache(maxsize=8)
def chart_digest(chart_dir: Path) -> str:
    """sha256 over the chart's files (path and bytes, sorted): the chart is vendored into every
    bundle, so a change to it is a change to every variant over that substrate."""
    digest = hashlib.sha256()
    for path in sorted(p for p in chart_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(chart_dir).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def dimensions(spec: TaskSpec, entry: SubstrateEntry) -> list[tuple[str, tuple[str, ...]]]:
    """The matrix's axes: each fault's layers, each argument given with alternatives (spelled as
    an author writes them: `256Mi`, `2s`), the access surfaces."""
    dims: list[tuple[str, tuple[str, ...]]] = []
    for fault in spec.faults:
        dims.append((f"{fault.name}.layer", fault.layers))
        for arg, alternatives in fault.args.items():
            if len(alternatives) > 1:
                dimension = _dimension(entry, fault.template, arg)
                dims.append((f"{fault.name}.{arg}", tuple(_spell(v, dimension) for v in alternatives)))
    dims.append(("access", tuple(s.name for s in spec.access)))
    return dims


def _dimension(entry: SubstrateEntry, template: str, arg: str) -> Dimension:
    """The dimension of a template parameter's values (a name or whole number: `number`)."""
    kind = next(p.type for p in entry.faults[template.split(".", 1)[1]].params if p.name == arg)
    return PARAM_DIMENSIONS.get(kind, Dimension.number)


def _spell(value, dimension: Dimension) -> str:
    """A value as a cell names it: a quantity in the unit an author writes (its base-unit number
    is no one's spelling), a whole number as digits, a name as written."""
    if dimension != Dimension.number and isinstance(value, int | float):
        return format_quantity(value, dimension)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def cells(spec: TaskSpec, library: Library, errors: Collector) -> Iterator[Variant | PrunedCell]:
    """Every cell of the matrix in a fixed order, built or pruned, one at a time."""
    entry = library.substrates[spec.substrate]
    chart = chart_digest(entry.directory / "chart")
    dims = dimensions(spec, entry)
    for cell in itertools.product(*(values for _, values in dims)):
        coordinates = {name: value for (name, _), value in zip(dims, cell, strict=True)}
        try:
            variant = _variant(spec, coordinates, entry, errors)
        except Pruned as reason:
            yield PrunedCell(task=spec.name, coordinates=coordinates, reason=reason.reason)
            continue
        yield variant.model_copy(update={"id": variant_id(variant, chart)})


def built(spec: TaskSpec, library: Library) -> Iterator[Variant]:
    """The built variants of a spec that has already been checked (its diagnostics are not
    collected again), one at a time: what `build` renders."""
    for cell in cells(spec, library, Collector()):
        if isinstance(cell, Variant):
            yield cell


def _variant(spec: TaskSpec, coordinates: dict[str, str], entry: SubstrateEntry, errors: Collector) -> Variant:
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
            if chosen is None:
                args[arg] = alternatives[0]
                continue
            dimension = _dimension(entry, fault.template, arg)
            args[arg] = next(v for v in alternatives if _spell(v, dimension) == chosen)
        template = entry.faults[fault.template.split(".", 1)[1]]
        recipe, manifest_text = instantiate(template, layer, args)
        bound = []
        if fault.name in repaired:
            for action in recipe.repair:
                channel, reason = bind(action, surface, substrate)
                if channel is None:
                    raise Pruned(f"the repair of fault '{fault.name}' ({layer} layer) {reason}")
                bound.append(BoundAction(action=action, channel=channel))
        # Re-firing a fault is its template's `retrigger`, else its injection at the runtime layer;
        # at the config and image layers the chart's values cannot be set again, but the injection's
        # workload triggers (a burst of concurrent sends) can: the concurrency challenge that shows
        # whether a repaired sequencer still hands out duplicates.
        retrigger = recipe.retrigger or (recipe.inject if layer == "runtime" else
                                         tuple(a for a in recipe.inject if isinstance(a, SendBurstAction)))
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
    return Variant(task=spec.name, id=_ID_PLACEHOLDER, coordinates=coordinates, spec=spec,
                   faults=tuple(faults), access=surface)


@functools.lru_cache(maxsize=256)
def _manifest_comparison(template: str, text: str) -> ast.Comparison:
    """A template's predicate, filled in, is parsed once per process: every variant of a task
    (and every task that uses the template alike) has the same text. Errors are not kept."""
    return parse_comparison(SourceFile(f"<manifest of {template}>", text))


def _manifest(text: str, template: str, spec: TaskSpec, substrate: Substrate, errors: Collector) -> Predicate:
    """Parse a template's manifestation predicate with the language's own grammar."""
    phases = tuple(p.name for p in spec.load.phases)
    local = Collector()
    try:
        comparison = _manifest_comparison(template, text)
    except DiagnosticError as error:
        errors.extend(error.diagnostics)
        raise Pruned(f"fault template '{template}' has an invalid manifestation predicate") from error
    predicate = lower_predicate(comparison, ExprContext(substrate=substrate, phases=phases, collector=local))
    if predicate is None:
        errors.extend(local.items)
        raise Pruned(f"fault template '{template}' has an invalid manifestation predicate")
    return predicate
