"""What a snapshot records of Redis, parsed from its replies (no Redis needed): every setting, the
ones arenac/model/redis_settings.py lets a gate name among them, secrets as digests, from a RESP2
list or a RESP3 map; a setting the server lacks is
absent, not invented; ACL users with their rules sorted and password hashes digested."""

from __future__ import annotations

import pytest

from arenac.model.redis_settings import RECORDED_SETTINGS
from arenac.runner.snapshot import redis_acl, redis_settings

REPLY = ["maxmemory", "268435456", "maxmemory-policy", "noeviction", "maxmemory-samples", "5",
         "appendonly", "yes", "appendfsync", "everysec", "min-replicas-to-write", "0",
         "min-replicas-max-lag", "10", "requirepass", "", "dir", "/var/lib/redis", "save", ""]


def test_the_recorded_settings_from_a_flat_reply():
    settings = redis_settings([w.encode() for w in REPLY])
    assert set(RECORDED_SETTINGS) <= set(settings)
    assert settings["appendonly"] == "yes" and settings["min-replicas-to-write"] == "0"
    # every other key too: scope must see a change the agent made to a setting no gate names
    assert settings["dir"] == "/var/lib/redis" and settings["save"] == ""


def test_a_secret_setting_is_recorded_as_a_digest_that_changes_with_it():
    first = redis_settings(["requirepass", "hunter2"])["requirepass"]
    assert "hunter2" not in first and first != redis_settings(["requirepass", "hunter3"])["requirepass"]


def test_a_map_reply_reads_the_same():
    assert redis_settings(dict(zip(REPLY[::2], REPLY[1::2], strict=True))) == redis_settings(REPLY)


def test_a_setting_the_server_lacks_is_absent():
    settings = redis_settings(["maxmemory", "0", "appendonly", "no"])
    assert settings == {"maxmemory": "0", "appendonly": "no"}


def test_a_reply_that_is_not_settings_is_refused():
    with pytest.raises(TypeError):
        redis_settings("OK")
    with pytest.raises(ValueError):
        redis_settings(["maxmemory"])  # a key without its value


def test_acl_users_with_sorted_rules_and_digested_passwords():
    acl = redis_acl([b"user fanout on #abcdef ~spine:* -@all +rpop +llen", "user default on nopass ~* +@all"])
    assert set(acl) == {"acl.default", "acl.fanout"}
    assert acl["acl.fanout"].split() == sorted(acl["acl.fanout"].split())
    assert "#abcdef" not in acl["acl.fanout"] and "+rpop" in acl["acl.fanout"]
    assert redis_acl("not a list") == {}
