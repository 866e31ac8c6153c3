"""`arenac.stage_dumps`: the IR and the matrix as canonical JSON, the same from any working
directory, and changed exactly when what lowering or expansion made changes."""

from __future__ import annotations

import json
import os

from arenac.pipeline import compile_paths
from arenac.stage_dumps import stage_dumps
from helpers import ROOT

SPEC = ROOT / "tests" / "golden" / "minimal" / "spec.arena"


def dumps_of(text: str, directory) -> dict[str, str]:
    spec = directory / "spec.arena"
    spec.write_text(text, encoding="utf-8")
    return stage_dumps(compile_paths([str(spec)]))


def test_the_dumps_name_the_spec_as_the_manifest_does_wherever_it_was_compiled(tmp_path):
    at_root = stage_dumps(compile_paths([SPEC.relative_to(ROOT).as_posix()]))
    os.chdir(tmp_path)  # the autouse fixture puts the working directory back
    from_elsewhere = stage_dumps(compile_paths([str(SPEC)]))
    assert at_root == from_elsewhere
    assert str(ROOT) not in at_root["ir.json"] and str(tmp_path) not in at_root["ir.json"]
    (task,) = json.loads(at_root["ir.json"]).values()
    assert task["spec"]["source"] == "spec/spec.arena" and task["source_map"]["task"]["file"] == "spec/spec.arena"


def test_a_trailing_comment_changes_no_stage_and_an_argument_changes_both(tmp_path):
    text = SPEC.read_text(encoding="utf-8")
    before = dumps_of(text, tmp_path)
    assert dumps_of(text + "# a note\n", tmp_path) == before
    after = dumps_of(text.replace("offset: 20s", "offset: 25s"), tmp_path)
    assert after["ir.json"] != before["ir.json"] and after["matrix.json"] != before["matrix.json"]
    (cell,) = json.loads(after["matrix.json"])["minimal"]["variants"]
    assert cell["id"] != json.loads(before["matrix.json"])["minimal"]["variants"][0]["id"]
