"""The library loader: fault templates are validated as they load."""

from __future__ import annotations

import shutil

import pytest
import yaml

from arenac.core.diagnostics import DiagnosticError
from arenac.lower.library import library_root, load_library


def copy_library(tmp_path):
    root = tmp_path / "library"
    shutil.copytree(library_root(), root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_shipped_sequencer_template_triggers_with_a_send_burst(tmp_path):
    template = load_library(copy_library(tmp_path)).substrates["spine"].faults["sequencer_rmw"]
    for recipe in template.layers.values():
        assert [a.kind for a in recipe.inject if a.kind == "send_burst"] == ["send_burst"]


def test_a_repair_may_not_use_a_harness_only_action(tmp_path):
    root = copy_library(tmp_path)
    path = root / "substrates/spine/faults/sequencer_rmw.yaml"
    template = yaml.safe_load(path.read_text())
    template["layers"]["image"]["repair"].append({"kind": "send_burst", "channel": "general",
                                                  "messages": 5, "concurrency": 2})
    path.write_text(yaml.safe_dump(template))
    with pytest.raises(DiagnosticError) as raised:
        load_library(root)
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.code == "E0601"
    assert "sequencer_rmw.yaml" in diagnostic.message
    assert "a repair cannot use a 'send_burst' action" in diagnostic.message
