"""Unit tests of the configuration layers, the key registry, releases and SpineSpec (no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arenac.substrate.spine.spec import SpecError, SpineSpec
from spine_services.configstore import ConfigStore
from spine_services.keys import SERVICES, ConfigError, keys_for, knob_defaults
from spine_services.maintenance import Schedule
from spine_services.releases import RELEASES, release


def write(path: Path, data: dict[str, str]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_precedence_default_file_env_runtime(tmp_path: Path) -> None:
    path = write(tmp_path / "message.yaml", {"DB_POOL_SIZE": "7", "DB_POOL_OVERFLOW": "1"})
    store = ConfigStore("message", path, {"SPINE_DB_POOL_SIZE": "8"})
    assert store.get("DB_POOL_TIMEOUT_MS") == "2000"  # default
    assert store.get("DB_POOL_OVERFLOW") == "1"  # file
    assert store.get("DB_POOL_SIZE") == "8"  # env beats file
    assert store.sources()["DB_POOL_SIZE"] == "env"
    assert store.set_runtime({"DB_POOL_SIZE": 3}) == {"DB_POOL_SIZE"}
    assert store.get_int("DB_POOL_SIZE") == 3 and store.sources()["DB_POOL_SIZE"] == "runtime"
    # a reload re-reads file and environment and drops run-time changes
    write(path, {"DB_POOL_SIZE": "7", "DB_POOL_OVERFLOW": "2"})
    assert store.reload() == {"DB_POOL_SIZE", "DB_POOL_OVERFLOW"}
    assert (store.get("DB_POOL_SIZE"), store.get("DB_POOL_OVERFLOW")) == ("8", "2")


def test_configmap_directory_is_read_like_a_file(tmp_path: Path) -> None:
    # a ConfigMap volume: one file per key, plus kubelet's hidden bookkeeping entries
    (tmp_path / "SEQUENCER_MODE").write_text("rmw\n")
    (tmp_path / "..data").mkdir()
    store = ConfigStore("message", tmp_path, {})
    assert store.get("SEQUENCER_MODE") == "rmw"
    assert store.unknown_in_file == []


def test_runtime_changes_are_all_or_nothing_and_checked(tmp_path: Path) -> None:
    store = ConfigStore("message", None, {})
    with pytest.raises(ConfigError, match="SEQUENCER_MODE"):
        store.set_runtime({"DB_POOL_SIZE": "4", "SEQUENCER_MODE": "random"})
    assert store.get("DB_POOL_SIZE") == "10"
    with pytest.raises(ConfigError, match="not reloadable"):
        store.set_runtime({"RELEASE": "1.5.0"})
    with pytest.raises(ConfigError, match="unknown key"):
        store.set_runtime({"MAINT_PERIOD_S": "1"})
    with pytest.raises(ConfigError, match=">= 1"):
        store.set_runtime({"DB_POOL_SIZE": "0"})


def test_non_reloadable_key_waits_for_restart(tmp_path: Path) -> None:
    path = write(tmp_path / "message.yaml", {"RELEASE": "1.4.2"})
    store = ConfigStore("message", path, {})
    write(path, {"RELEASE": "1.5.0"})
    store.reload()
    assert store.get("RELEASE") == "1.4.2"
    assert store.pending_restart() == ["RELEASE"]


def test_invalid_file_on_reload_keeps_the_running_config(tmp_path: Path) -> None:
    path = write(tmp_path / "message.yaml", {"DB_POOL_SIZE": "4"})
    store = ConfigStore("message", path, {})
    write(path, {"DB_POOL_SIZE": "many"})
    with pytest.raises(ConfigError, match="integer"):
        store.reload()
    assert store.get("DB_POOL_SIZE") == "4"


def test_every_db_service_has_the_contract_keys() -> None:
    contract = {"DB_POOL_SIZE": "10", "DB_POOL_OVERFLOW": "5", "DB_POOL_TIMEOUT_MS": "2000", "DB_ROLE": "spine_app"}
    for service in ("auth", "channel", "message", "fanout", "maintenance"):
        assert contract.items() <= knob_defaults(service).items()
    assert knob_defaults("channel")["READ_CONSISTENCY_HOLD_MS"] == "250"
    assert knob_defaults("message")["SEQUENCER_MODE"] == "atomic"
    assert {k: knob_defaults("maintenance")[k] for k in ("MAINT_PERIOD_S", "MAINT_OFFSET_S", "MAINT_DURATION_S")} == {
        "MAINT_PERIOD_S": "60", "MAINT_OFFSET_S": "40", "MAINT_DURATION_S": "6"}
    assert {k: knob_defaults("fanout")[k] for k in ("FANOUT_QUEUE", "FANOUT_BATCH")} == {
        "FANOUT_QUEUE": "spine:fanout", "FANOUT_BATCH": "50"}
    assert all(keys_for(s)["RELEASE"].default == "1.4.2" and keys_for(s)["TIME_SCALE"].default == "1.0"
               for s in SERVICES)


def test_releases() -> None:
    assert {v for v, r in RELEASES.items() if r.healthy} == {"1.4.2", "1.4.3"}
    assert release("1.5.0").sequencer_always_rmw and release("1.5.1").leak_every_nth_seq
    with pytest.raises(ConfigError, match="no such release"):
        release("9.9.9")


def test_spec_sets_and_values_overlay() -> None:
    spec = SpineSpec().with_sets(["message.DB_POOL_SIZE=4", "DB_POOL_TIMEOUT_MS=50", "redis.maxmemory=1mb",
                                  "postgres.idle_in_transaction_session_timeout=5s", "TIME_SCALE=0.1"])
    assert spec.services["message"].config["DB_POOL_SIZE"] == "4"
    assert spec.services["auth"].config["DB_POOL_SIZE"] == "10"
    assert all(spec.services[s].config["DB_POOL_TIMEOUT_MS"] == "50" for s in SERVICES if s != "gateway")
    assert spec.redis.maxmemory == "1mb" and spec.timeScale == "0.1"
    assert spec.postgres.settings["idle_in_transaction_session_timeout"] == "5s"
    assert spec.service_file("message")["TIME_SCALE"] == "0.1"
    overlay = SpineSpec.from_values(
        {"services": {"message": {"release": "1.5.1", "config": {"SEQUENCER_MODE": "rmw"}}}})
    assert overlay.services["message"].release == "1.5.1"
    assert overlay.services["message"].config["DB_POOL_SIZE"] == "10"  # merged, not replaced
    for bad in (["message.SEQUENCER_MODE=sometimes"], ["NO_SUCH_KEY=1"], ["gateway.DB_POOL_SIZE=3"]):
        with pytest.raises(SpecError):
            SpineSpec().with_sets(bad)
    with pytest.raises(SpecError):
        SpineSpec.from_values({"services": {"message": {"release": "2.0.0"}}})


def test_maintenance_schedule_is_anchored_to_the_epoch() -> None:
    schedule = Schedule(period_s=60, offset_s=40, duration_s=6)
    assert schedule.next_start(0) == 40
    assert schedule.next_start(40) == 40
    assert schedule.next_start(41) == 100
    assert schedule.next_start(6000.5) == 6040
