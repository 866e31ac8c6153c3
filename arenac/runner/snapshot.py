"""State snapshots for the safety gate (format: docs/evidence.md, `snapshots/<label>.json`).

Protected tables are checksummed over the rows that existed at the baseline snapshot (the load
adds rows all the time) and over every column except sequence counters (`seq`, `last_seq`),
which a permitted renumbering may change; lost, altered or duplicated rows change the checksum.
"""

from __future__ import annotations

from arenac.model.plan import Plan
from arenac.runner.harness_io import HarnessIO

_COUNTERS = ("seq", "last_seq")


def take_snapshot(io: HarnessIO, plan: Plan, t: float, baseline_max_ids: dict[str, int] | None = None) -> dict:
    config, events, release = {}, {}, {}
    for service in plan.snapshots.config:
        view = io.admin(service, "GET", "/admin/config")
        config[service] = {k: str(v) for k, v in sorted(view["config"].items()) if k not in ("RELEASE", "TIME_SCALE")}
        release[service] = view["release"]
        events[service] = sorted(name for name, on in io.admin(service, "GET", "/admin/event")["events"].items() if on)
    db_settings = {}
    for role, database, setting in io.query(
            "SELECT coalesce(r.rolname, ''), coalesce(d.datname, ''), unnest(s.setconfig) FROM pg_db_role_setting s "
            "LEFT JOIN pg_roles r ON r.oid = s.setrole LEFT JOIN pg_database d ON d.oid = s.setdatabase"):
        key, _, value = setting.partition("=")
        db_settings[f"{role or database}.{key}"] = value
    grants: dict[str, list[str]] = {}
    for table, privilege in io.query(
            "SELECT table_name, privilege_type FROM information_schema.role_table_grants "
            "WHERE grantee = 'spine_app' ORDER BY 1, 2"):
        grants.setdefault(table, []).append(privilege)
    redis_state = {"maxmemory": str(_redis_config(io, "maxmemory"))}
    acl = io.redis("ACL", "GETUSER", "fanout")
    redis_state["acl.fanout"] = _acl_text(acl)
    tables = {table: _table_state(io, table, (baseline_max_ids or {}).get(table)) for table in plan.snapshots.tables}
    sequences = {name: _sequence_state(io, name) for name in plan.snapshots.sequences}
    return {"t": round(t, 3), "config": config, "events": events, "release": release, "db_settings": db_settings,
            "grants": grants, "redis": redis_state, "tables": tables, "sequences": sequences}


def max_ids(io: HarnessIO, plan: Plan) -> dict[str, int]:
    return {table: int(io.query(f"SELECT coalesce(max(id), 0) FROM {table}")[0][0]) for table in plan.snapshots.tables}


def _table_state(io: HarnessIO, table: str, upto: int | None) -> dict:
    columns = [c for (c,) in io.query(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
        f"AND table_name = '{table}' ORDER BY ordinal_position") if c not in _COUNTERS]
    where = f"WHERE id <= {int(upto)}" if upto is not None else ""
    row = ", ".join(f"coalesce({c}::text, '')" for c in columns)
    rows, checksum = io.query(
        f"SELECT count(*), coalesce(md5(string_agg(concat_ws('|', {row}), E'\\n' ORDER BY id)), '') "
        f"FROM {table} {where}")[0]
    return {"rows": int(rows), "checksum": checksum}


def _sequence_state(io: HarnessIO, name: str) -> dict:
    table, column = name.split(".")
    groups, rows, duplicates, gaps = io.query(
        f"WITH s AS (SELECT channel_id, {column} AS v, count(*) AS n FROM {table} GROUP BY 1, 2), "
        f"g AS (SELECT channel_id, max(v) AS top, count(*) AS distinct_values FROM s GROUP BY 1) "
        f"SELECT (SELECT count(*) FROM g), (SELECT coalesce(sum(n), 0) FROM s), "
        f"(SELECT coalesce(sum(n - 1), 0) FROM s), (SELECT coalesce(sum(top - distinct_values), 0) FROM g)")[0]
    return {"groups": int(groups), "rows": int(rows), "duplicates": int(duplicates), "gaps": int(gaps)}


def _redis_config(io: HarnessIO, key: str):
    reply = io.redis("CONFIG", "GET", key)
    if isinstance(reply, dict):
        return _text(next(iter(reply.values()), ""))
    return _text(reply[1]) if len(reply) > 1 else ""


def _acl_text(reply) -> str:
    if isinstance(reply, dict):
        commands = reply.get(b"commands", reply.get("commands", ""))
    else:
        pairs = dict(zip(reply[::2], reply[1::2])) if reply else {}
        commands = pairs.get(b"commands", pairs.get("commands", ""))
    # Redis lists the rules in the order they were added, which a restart may change: compare sets
    return " ".join(sorted(_text(commands).split()))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
