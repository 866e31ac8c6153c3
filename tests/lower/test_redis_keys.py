"""`redis(KEY)` names what snapshots record (arenac/model/redis_settings.py): a recorded setting or
`acl.USER` of a Redis user of the descriptor compiles in a guard, `changes only` and `protect`; any
other key is E0214 at the key, with the near key and the recorded ones as the hint."""

from __future__ import annotations

import pytest

from arenac.broker.redisgate import CONFIG_SETTABLE
from arenac.core.diagnostics import DiagnosticError
from arenac.model.gates import ChangesOnly, Guard
from arenac.model.redis_settings import RECORDED_SETTINGS
from helpers.specs import compile_text, spec

GUARD = "    guard config(message.DB_POOL_SIZE) <= 32\n"


def safety(*lines: str):
    text = spec().replace(GUARD, "".join(f"    {line}\n" for line in lines))
    return compile_text(text).tasks[0].lowered.spec.gates.safety


def diagnostics(*lines: str):
    text = spec().replace(GUARD, "".join(f"    {line}\n" for line in lines))
    with pytest.raises(DiagnosticError) as raised:
        compile_text(text)
    return raised.value.diagnostics


@pytest.mark.parametrize("line", [
    "guard redis(min-replicas-to-write) == 0",
    "guard redis(appendonly) == yes",
    "guard redis(appendfsync) != no",
    "guard redis(maxmemory) >= 64Mi",
    "guard redis(maxmemory-policy) == noeviction",
    "changes only config(message.DB_POOL_SIZE), redis(min-replicas-max-lag, acl.fanout)",
])
def test_a_recorded_setting_or_user_compiles(line):
    targets = [t for c in safety(line) if isinstance(c, Guard | ChangesOnly)
               for t in (c.targets if isinstance(c, ChangesOnly) else (c.target,))]
    assert any(t.kind == "redis" for t in targets)


def test_an_unrecorded_setting_is_e0214_at_the_key_with_the_near_one():
    (found,) = diagnostics("guard redis(min-replica-to-write) >= 1")
    assert found.code == "E0214"
    assert "redis(min-replica-to-write) is not a Redis setting snapshots record" in found.message
    assert found.hint.startswith("did you mean 'min-replicas-to-write'?")
    assert "appendonly" in found.hint and "acl.USER" in found.hint
    assert found.span.column == len("    guard redis(") + 1


def test_a_setting_nothing_is_near_lists_the_recorded_ones():
    (found,) = diagnostics("changes only redis(save)")
    assert found.code == "E0214" and not found.hint.startswith("did you mean")
    assert all(key in found.hint for key in RECORDED_SETTINGS)


def test_an_unknown_acl_user_is_e0214_with_the_users():
    (found,) = diagnostics("changes only redis(acl.fanot)")
    assert found.code == "E0214" and "no Redis ACL user 'fanot'" in found.message
    assert found.hint == "did you mean 'fanout'?"


def test_what_the_agent_may_config_set_is_recorded():
    """A setting the broker lets the agent change that no snapshot records would be a change no
    `changes only` sees."""
    assert set(RECORDED_SETTINGS) >= CONFIG_SETTABLE
