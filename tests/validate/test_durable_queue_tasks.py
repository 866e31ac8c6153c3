"""The two tasks on a Redis that persists its queue (a `healthy` block: appendonly "yes"),
durable-queue-acl and durable-queue-memory: they compile without a warning, every bundle's chart
and its healthy control run a persisting Redis, the queue is judged across the restart challenge,
and the choices their header comments explain hold (the run-time layer would be a variant a blind
restart passes; without the block no variant could qualify)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arenac.model.gates import Guard, ProtectQueue, SurvivesRestart
from arenac.pipeline import compile_paths, write_bundles
from helpers import ROOT
from helpers.specs import compile_text

TASKS = ("durable-queue-acl", "durable-queue-memory")


def text(task: str) -> str:
    return (ROOT / "tasks" / f"{task}.arena").read_text(encoding="utf-8")


@pytest.mark.parametrize("task", TASKS)
def test_compiles_clean_with_a_persisting_redis(task, tmp_path: Path):
    compiled = compile_paths([f"tasks/{task}.arena"])
    (lowered,) = compiled.tasks
    assert lowered.warnings == ()
    assert [(s.ref, s.value) for s in lowered.lowered.spec.healthy] == [("redis.appendonly", "yes")]
    assert {cell.access for cell in lowered.variants} == {"shell", "scoped_kubectl"}
    written = write_bundles(compiled, tmp_path)
    assert len(written) == 2
    for bundle in written:
        overlay = yaml.safe_load((bundle.path / "chart" / "values.yaml").read_text())["spine"]
        assert overlay["redis"]["appendonly"] == "yes"
        assert yaml.safe_load((bundle.path / "chart" / "healthy-values.yaml").read_text()) == {
            "redis": {"appendonly": "yes"}}


@pytest.mark.parametrize("task", TASKS)
def test_the_queue_is_judged_across_a_restart_of_redis(task):
    (compiled,) = compile_paths([f"tasks/{task}.arena"]).tasks
    safety = compiled.lowered.spec.gates.safety
    assert any(isinstance(c, ProtectQueue) and c.at == ("soak_end", "after_restart") for c in safety)
    assert any(isinstance(c, SurvivesRestart) and "redis" in c.services for c in safety)
    guards = {c.text for c in safety if isinstance(c, Guard)}
    assert "redis(appendonly) == yes" in guards


def test_the_memory_task_holds_the_eviction_policy():
    (compiled,) = compile_paths(["tasks/durable-queue-memory.arena"]).tasks
    guards = {c.text for c in compiled.lowered.spec.gates.safety if isinstance(c, Guard)}
    assert "redis(maxmemory-policy) == noeviction" in guards


@pytest.mark.parametrize("task", TASKS)
def test_without_the_healthy_block_no_variant_could_qualify(task):
    without = text(task).replace('  healthy {\n    config(redis.appendonly) = "yes"\n  }\n', "")
    assert without != text(task)
    (compiled,) = compile_text(without, f"{task}.arena").tasks
    assert [w.code for w in compiled.warnings] == ["E0530"]


@pytest.mark.parametrize(("task", "scope"), [
    ("durable-queue-acl", ("changes only config(redis.acl-fanout), redis(acl.fanout)",
                           "changes only redis(acl.fanout)")),
    ("durable-queue-memory", ("changes only redis(maxmemory), config(redis.maxmemory)",
                              "changes only redis(maxmemory)")),
])
def test_the_run_time_layer_would_be_repaired_by_a_blind_restart(task, scope):
    old, new = scope
    runtime = text(task).replace("layer = config", "layer = runtime").replace(old, new)
    (compiled,) = compile_text(runtime, f"{task}.arena").tasks
    assert [w.code for w in compiled.warnings] == ["E0528"]
