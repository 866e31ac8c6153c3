"""The Redis settings `redis(KEY)` may name: one list, read by the compiler and the snapshot's tests.

Contract: `RECORDED_SETTINGS` are `CONFIG GET` keys every snapshot records under `redis`
(runner/snapshot.py records every key, these among them, so that `changes only` sees whatever the
agent changed; a test holds that these are recorded); the compiler accepts `redis(KEY)` in a guard, `changes
only` or `protect` only for one of them, or for `acl.USER` with USER in the descriptor's Redis
users (lower/targets.py, E0214), because a key that no snapshot records is absent from every
snapshot: a guard on it could never hold and a `changes only` naming it would permit nothing.
The list covers what a task can observe or break of Redis as a datastore: its memory limit and
eviction policy (what the agent may `CONFIG SET`, broker/redisgate.py, is a subset: a test holds
it so), its persistence (AOF) and the replication guard rails that refuse writes.
`is_redis_acl(key)` tells an ACL user's item (`acl.fanout`) from a setting.
"""

from __future__ import annotations

RECORDED_SETTINGS: tuple[str, ...] = (
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "appendonly",
    "appendfsync",
    "min-replicas-to-write",
    "min-replicas-max-lag",
)
ACL_PREFIX = "acl."


def is_redis_acl(key: str) -> bool:
    return key.startswith(ACL_PREFIX)
