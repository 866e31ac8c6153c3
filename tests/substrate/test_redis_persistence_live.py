"""spine's Redis as a datastore, live (loopback only, through the substrate's own LocalRedis): with
`appendonly yes` in its ConfigMap the fan-out queue outlives a restart of Redis, with `no` it is
lost; a config-layer ACL rule (`acl-fanout`) is in force from the start and after a restart."""

from __future__ import annotations

import secrets

import pytest
import redis
import yaml

from arenac.substrate.procs import free_port
from arenac.substrate.spine.redis_local import LocalRedis
from arenac.substrate.spine.spec import REDIS_USERS, RedisSpec

pytestmark = pytest.mark.live
QUEUE = "spine:fanout"


def _redis(tmp_path, **values) -> LocalRedis:
    configmap = tmp_path / "config" / "redis.yaml"
    configmap.parent.mkdir(parents=True)
    configmap.write_text(yaml.safe_dump(RedisSpec(**values).configmap()))
    return LocalRedis(tmp_path / "redis", free_port(), {u: secrets.token_hex(8) for u in REDIS_USERS}, configmap)


def _queue_after_restart(server: LocalRedis, log) -> int:
    server.start(log, timeout=15)
    try:
        with server.client() as conn:
            conn.lpush(QUEUE, *(f'{{"id": {i}}}' for i in range(25)))
            assert conn.llen(QUEUE) == 25
        server.stop()
        server.start(log, timeout=15)
        with server.client() as conn:
            return int(conn.llen(QUEUE))
    finally:
        server.stop()


@pytest.mark.parametrize(("appendonly", "kept"), [("yes", 25), ("no", 0)])
def test_the_queue_survives_a_restart_only_with_aof(tmp_path, appendonly, kept):
    server = _redis(tmp_path, appendonly=appendonly)
    assert _queue_after_restart(server, tmp_path / "redis.log") == kept
    assert ((tmp_path / "redis" / "appendonly.aof").exists()) == (appendonly == "yes")


def test_a_config_layer_acl_rule_holds_across_a_restart(tmp_path):
    server = _redis(tmp_path, acl={"fanout": "-@list"})
    server.start(tmp_path / "redis.log", timeout=15)
    try:
        for _ in range(2):
            fanout = redis.Redis.from_url(server.url("fanout"), socket_timeout=2)
            with fanout, pytest.raises(redis.exceptions.NoPermissionError):
                fanout.rpop(QUEUE)
            server.stop()
            server.start(tmp_path / "redis.log", timeout=15)
    finally:
        server.stop()
