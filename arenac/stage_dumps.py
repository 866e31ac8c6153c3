"""What two of the pipeline's steps made of a compilation, as canonical JSON: the goldens pin it
beside each golden bundle (tests/golden/<case>/ir.json and matrix.json), so a change to lowering or
expansion shows in review as a change of these files, not only of the bundles it leads to."""

from __future__ import annotations

import dataclasses

from arenac.core.serialize import dump_json, model_data
from arenac.pipeline import Compilation, spec_input_path


def stage_dumps(compilation: Compilation) -> dict[str, str]:
    """What lowering and expansion made of each task, as canonical JSON by task name: `ir.json` (the
    lowered spec and its source map; the substrate's descriptor is library data, named by the spec)
    and `matrix.json` (the built cells with their ids, the pruned ones with their reasons). The spec's
    own path is written as the manifest writes it, so the dumps do not depend on where it was compiled."""
    ir, matrix = {}, {}
    for task in compilation.tasks:
        spec = task.lowered.spec
        portable = {spec.source: spec_input_path(spec.source)}
        spans = dataclasses.asdict(task.lowered.spans)
        if not spans["healthy"]:  # a task without a `healthy` block dumps as before the block existed
            del spans["healthy"]
        ir[spec.name] = _renamed({"spec": model_data(spec), "source_map": spans}, portable)
        matrix[spec.name] = {"variants": [model_data(cell) for cell in task.variants],
                             "pruned": [model_data(cell) for cell in task.pruned]}
    return {"ir.json": dump_json(ir), "matrix.json": dump_json(matrix)}


def _renamed(data: object, names: dict[str, str]) -> object:
    """DATA with every string that is a key of NAMES replaced by its value."""
    if isinstance(data, dict):
        return {key: _renamed(value, names) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_renamed(item, names) for item in data]
    return names.get(data, data) if isinstance(data, str) else data
