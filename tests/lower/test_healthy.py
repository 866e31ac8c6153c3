"""A task's `healthy { }` block: how its substrate is configured when healthy, for every variant and
the healthy control alike (lower/healthy.py). Both sides: a good block lowers to settings whose chart
values paths the substrate's own chart reads (proved by rendering it), reaches every variant's
overlay and the healthy control's values, and is what E0530, E0528 and the oracle's end state read;
a bad one is refused at the author's token (the corpus, 111-116, pins the texts)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arenac.checks.queue_persistence import unkept_queue_warnings
from arenac.core.diagnostics import DiagnosticError
from arenac.k8s.helm import render_chart
from arenac.lower.healthy import chart_values, values_path
from arenac.lower.library import load_library
from arenac.model.substrate import harness_owned_key
from arenac.pipeline import write_bundles
from arenac.substrate.spine.local_config import spine_spec
from arenac.validate import oracle_end_state
from helpers.specs import built_variants, compile_text

SPEC = """
task lost-notifications {
  title = "Notifications vanish"
  substrate = spine
  instruction = "Unread counts are stuck. Make them current again without losing any, then declare."
  HEALTHY
  fault acl = spine.redis_acl_deny(user: fanout) {
    layer = LAYER
  }
  access = shell
  gate outcome {
    use standard_outcome(route: send)
    use fanout_drained()
  }
  gate safety {
    survives restart(fanout, redis)
    changes only config(redis.acl-fanout), redis(acl.fanout)
    protect queue(fanout) at soak_end, after_restart
  }
}
"""
PERSISTS = 'healthy {\n    config(redis.appendonly) = "yes"\n  }'


def spec(healthy: str = PERSISTS, layer: str = "config") -> str:
    return SPEC.replace("HEALTHY", healthy).replace("LAYER", layer)


def errors_of(text: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    return [(d.code, d.span.line, d.span.column, d.message) for d in raised.value.diagnostics if d.span]


def descriptor():
    return load_library().substrates["spine"]


# ---- the good side -----------------------------------------------------------------------------


def test_a_block_lowers_to_settings_in_the_keys_own_units():
    text = spec('healthy {\n    config(redis.appendonly) = "yes"\n    config(redis.maxmemory) = 512Mi\n'
                '    config(message.DB_POOL_TIMEOUT_MS) = 3s\n    config(message.SEQUENCER_MODE) = atomic\n'
                '    config(auth.EVENTS) = ""\n  }')
    (task,) = compile_text(text).tasks
    settings = {(s.ref, s.value, s.values_path) for s in task.lowered.spec.healthy}
    assert settings == {("redis.appendonly", "yes", "redis.appendonly"),
                        ("redis.maxmemory", "536870912", "redis.maxmemory"),
                        ("message.DB_POOL_TIMEOUT_MS", "3000", "services.message.config.DB_POOL_TIMEOUT_MS"),
                        ("message.SEQUENCER_MODE", "atomic", "services.message.config.SEQUENCER_MODE"),
                        ("auth.EVENTS", "", "services.auth.config.EVENTS")}


def test_every_settable_key_is_where_the_chart_reads_it():
    """values_path is read off the chart's values, not written per key: rendering the chart with a
    value at each derived path puts it in that service's ConfigMap under the key."""
    entry = descriptor()
    chart = chart_values(entry.chart_dir)
    derived = {}
    for service in entry.descriptor.services:
        for key in service.config:
            if key in ("RELEASE", "TIME_SCALE"):
                assert values_path(chart, service, key) is None  # from the release and the time scale
                continue
            path = values_path(chart, service, key)
            assert path is not None, f"{service.name}.{key}"
            derived[(service.configmap, key)] = path
    assert derived[("spine-redis-config", "acl-fanout")] == "redis.acl.fanout"
    values: dict = {}
    for (_, key), path in derived.items():
        tree = values
        *parents, leaf = path.split(".")
        for part in parents:
            tree = tree.setdefault(part, {})
        tree[leaf] = "64mb" if key == "maxmemory" else "everysec" if key == "appendfsync" else \
            "allkeys-lru" if key == "maxmemoryPolicy" else "yes" if key == "appendonly" else f"sentinel-{key}"
    configmaps = {obj["metadata"]["name"]: obj.get("data") or {} for obj in render_chart(entry.chart_dir, values)
                  if obj["kind"] == "ConfigMap"}
    for (configmap, key), path in derived.items():
        *_, leaf = path.split(".")
        tree = values
        for part in path.split(".")[:-1]:
            tree = tree[part]
        assert configmaps[configmap][key] == tree[leaf], (configmap, key, path)


def test_the_block_reaches_every_variant_and_the_healthy_control(tmp_path: Path):
    compiled = compile_text(spec())
    (written,) = write_bundles(compiled, tmp_path)
    overlay = yaml.safe_load((written.path / "chart" / "values.yaml").read_text())["spine"]
    assert overlay["redis"] == {"appendonly": "yes", "acl": {"fanout": "-@list"}}  # healthy, then the fault's
    healthy = yaml.safe_load((written.path / "chart" / "healthy-values.yaml").read_text())
    assert healthy == {"redis": {"appendonly": "yes"}}  # the settings alone, in the substrate chart's shape
    control = spine_spec(written.path, 0.1, healthy=True)
    assert control.redis.appendonly == "yes" and control.redis.acl == {}
    episode = spine_spec(written.path, 0.1)
    assert episode.redis.appendonly == "yes" and episode.redis.acl == {"fanout": "-@list"}


def test_without_the_block_nothing_changes(tmp_path: Path):
    """No block, or an empty one, is the task as it always was: same ids, no healthy-values.yaml,
    the healthy control runs the substrate chart alone."""
    plain, empty = compile_text(spec(healthy="")), compile_text(spec(healthy="healthy {\n  }"))
    assert [v.id for v in plain.tasks[0].variants] == [v.id for v in empty.tasks[0].variants]
    assert [v.id for v in plain.tasks[0].variants] != [v.id for v in compile_text(spec()).tasks[0].variants]
    (written,) = write_bundles(plain, tmp_path)
    assert not (written.path / "chart" / "healthy-values.yaml").exists()
    assert spine_spec(written.path, 0.1, healthy=True).redis.appendonly == "no"


def test_e0530_reads_the_tasks_healthy_redis():
    (persisting,) = compile_text(spec()).tasks
    assert unkept_queue_warnings(persisting.lowered) == []
    (default,) = compile_text(spec(healthy="")).tasks
    (warning,) = [w for w in default.warnings if w.code == "E0530"]
    assert 'healthy { config(redis.appendonly) = "yes" }' in (warning.hint or "")
    (saying_no,) = compile_text(spec(healthy=PERSISTS.replace('"yes"', '"no"'))).tasks
    assert [w.code for w in saying_no.warnings] == ["E0530"]


def test_a_persisting_redis_makes_a_run_time_redis_fault_one_a_blind_restart_repairs():
    """Restarting Redis undoes a run-time ACL; when Redis keeps its queue across the restart, the
    protected queue no longer notices it (E0528), as it does when Redis keeps nothing."""
    (persisting,) = compile_text(spec(layer="runtime").replace(
        "changes only config(redis.acl-fanout), redis(acl.fanout)", "changes only redis(acl.fanout)")).tasks
    assert [w.code for w in persisting.warnings] == ["E0528"]
    (default,) = compile_text(spec(healthy="", layer="runtime").replace(
        "changes only config(redis.acl-fanout), redis(acl.fanout)", "changes only redis(acl.fanout)")).tasks
    assert "E0528" not in [w.code for w in default.warnings]


def test_the_oracles_end_state_starts_from_the_tasks_healthy_stack():
    (task,) = compile_text(spec('healthy {\n    config(message.DB_POOL_SIZE) = 20\n  }')).tasks
    (variant,) = built_variants(task)
    assert oracle_end_state(variant, task.lowered.substrate)["message.DB_POOL_SIZE"] == "20"
    guarded = spec('healthy {\n    config(message.DB_POOL_SIZE) = 40\n  }').replace(
        "protect queue(fanout)", "guard config(message.DB_POOL_SIZE) <= 32\n    protect queue(fanout)")
    assert [code for code, *_ in errors_of(guarded)] == ["E0508"]


# ---- the bad side ------------------------------------------------------------------------------


@pytest.mark.parametrize(("setting", "code", "column", "words"), [
    ('config(redis.appendonyl) = "yes"', "E0203", 12, "has no config key 'appendonyl'"),
    ('config(rdis.appendonly) = "yes"', "E0203", 12, "unknown service 'rdis'"),
    ("config(message.TIME_SCALE) = 0.1", "E0216", 12, "the harness's time scale"),
    ("config(fanout.DB_ROLE) = spine_operator", "E0216", 12, "the harness's to set"),
    ('config(auth.AUTH_SECRET) = "x"', "E0216", 12, "the harness's to set"),
    ('config(fanout.REDIS_FANOUT_URL) = "redis://x"', "E0216", 12, "the harness's to set"),
    ('config(message.PG_HOST) = "db"', "E0216", 12, "the harness's to set"),
    ('config(message.RELEASE) = "1.5.0"', "E0216", 12, "the release (the image)"),
    ('config(message.DB_POOL_SIZE) = "many"', "E0302", 36, "holds a plain number, not a string"),
    ("config(message.SEQUENCER_MODE) = 2", "E0302", 38, "holds a name, not 2"),
    ("config(redis.maxmemory) = 30s", "E0301", 31, "holds a size, not a duration"),
    ("config(message.DB_POOL_TIMEOUT_MS) = 2Mi", "E0301", 42, "holds a duration, not a size"),
    ('redis(appendonly) = "yes"', "E0204", 5, "a healthy block sets config keys, not redis(...)"),
    ('config(redis) = "yes"', "E0305", 5, "names one config key, SERVICE.KEY"),
])
def test_a_bad_setting_is_refused_at_its_token(setting, code, column, words):
    ((found, line, at, message),) = errors_of(spec(f"healthy {{\n    {setting}\n  }}"))
    assert (found, line, at) == (code, 7, column) and words in message


def test_a_key_set_twice_and_a_second_block_are_refused():
    twice = errors_of(spec('healthy {\n    config(redis.appendonly) = "yes"\n    config(redis.appendonly) = "no"\n  }'))
    assert [(code, line) for code, line, *_ in twice] == [("E0208", 8)]
    second = errors_of(spec(PERSISTS + '\n  healthy {\n    config(redis.appendfsync) = always\n  }'))
    assert [(code, line) for code, line, *_ in second] == [("E0208", 9)]


def test_a_fault_whose_chart_values_set_a_healthy_key_is_refused_where_it_sets_them():
    acl = spec('healthy {\n    config(redis.appendonly) = "yes"\n    config(redis.acl-fanout) = "+@list"\n  }')
    ((code, line, column, message),) = errors_of(acl)
    assert (code, line, column) == ("E0532", 8, 5) and "fault 'acl' (config layer)" in message
    assert "its repair restores ''" in message
    compile_text(acl.replace("layer = config", "layer = runtime").replace(
        "changes only config(redis.acl-fanout), redis(acl.fanout)", "changes only redis(acl.fanout)"))


def test_harness_owned_keys_are_one_list():
    assert all(harness_owned_key(k) for k in ("TIME_SCALE", "DB_ROLE", "AUTH_SECRET", "PG_HOST", "REDIS_URL"))
    assert not any(harness_owned_key(k) for k in ("DB_POOL_SIZE", "appendonly", "URL_PREFIX"))
