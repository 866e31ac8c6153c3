"""spine's Redis configuration without a server: the spec's Redis values (appendonly, appendfsync,
per-user ACL rules) are checked, become the ConfigMap's data, and redis.conf is written from that
data (what the chart's container reads at start); the bundle's rendered ConfigMap reads back."""

from __future__ import annotations

import pytest

from arenac.substrate.spine.local_config import redis_values
from arenac.substrate.spine.redis_local import conf_text
from arenac.substrate.spine.spec import SpecError, SpineSpec

PASSWORDS = {user: "pw" for user in ("default", "fanout", "harness", "agent")}


def test_the_healthy_redis_keeps_nothing_and_adds_no_rules():
    configmap = SpineSpec().redis.configmap()
    assert configmap == {"maxmemory": "256mb", "maxmemoryPolicy": "noeviction", "appendonly": "no",
                         "appendfsync": "everysec"}
    conf = conf_text(1234, configmap, PASSWORDS)
    assert "appendonly no\n" in conf and 'save ""\n' in conf
    assert "+zremrangebyrank\n" in conf  # the fanout user's own rules, nothing appended


def test_aof_and_an_acl_rule_reach_redis_conf():
    spec = SpineSpec.from_values({"redis": {"appendonly": "yes", "appendfsync": "always", "acl": {"fanout": "-@list"}}})
    conf = conf_text(1234, spec.redis.configmap(), PASSWORDS)
    assert "appendonly yes\nappendfsync always\n" in conf
    fanout = next(line for line in conf.splitlines() if line.startswith("user fanout "))
    assert fanout.endswith("+zremrangebyrank -@list")  # applied last: it takes the list commands back


def test_an_unquoted_yaml_boolean_reads_as_redis_word():
    assert "appendonly yes\n" in conf_text(1, {"appendonly": "true"}, PASSWORDS)
    assert "appendonly no\n" in conf_text(1, {"appendonly": "false"}, PASSWORDS)


@pytest.mark.parametrize(("values", "problem"), [
    ({"appendonly": "maybe"}, "expected yes or no"),
    ({"appendfsync": "sometimes"}, "expected one of always, everysec, no"),
    ({"acl": {"nobody": "-@list"}}, "unknown Redis user(s) nobody"),
    ({"acl": {"fanout": "on >secret"}}, "may not set a password"),
])
def test_bad_redis_values_are_refused(values, problem):
    with pytest.raises(SpecError) as raised:
        SpineSpec.from_values({"redis": values})
    assert any(problem in line for line in raised.value.problems)


def test_set_takes_the_persistence_settings():
    assert SpineSpec().with_sets(["redis.appendonly=yes"]).redis.appendonly == "yes"
    with pytest.raises(SpecError, match=r"redis\.appendfsync"):
        SpineSpec().with_sets(["redis.acl=x"])


def test_the_rendered_configmap_reads_back_as_the_values():
    spec = SpineSpec.from_values({"redis": {"appendonly": "yes", "acl": {"fanout": "-@list"}}})
    back = SpineSpec.from_values({"redis": redis_values(spec.redis.configmap())})
    assert back.redis == spec.redis
