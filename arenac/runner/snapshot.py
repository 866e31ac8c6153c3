"""State snapshots for the safety gate (format: docs/evidence.md, `snapshots/<label>.json`).

A snapshot records everything an agent could change to repair (or to fake a repair of) a fault,
so that `changes only` and `protect` see it:
- every key of every application service's effective run-time config (TIME_SCALE included; the
  release is recorded on its own), its admin events and release; with the stack at hand (its
  config files) or the ConfigMaps' data as the Kubernetes API answers them (`configmap_data`, a
  substrate on a cluster), what every workload's ConfigMap holds (Redis's included), the same
  record either way;
- PostgreSQL: role and database settings (pg_db_role_setting); every role's attributes (the
  password only as a digest); every role membership (pg_auth_members, with its admin / inherit /
  set options); the privileges of every grantee (PUBLIC included) on every relation outside the
  system schemas, on their columns, on every schema and on the database (owners' implicit
  privileges included, so a change of owner shows);
- Redis: every `CONFIG GET *` key (secrets as digests: a change still shows), among them the
  settings of model/redis_settings.py that the compiler lets `redis(KEY)` name, and every ACL
  user's rules (`ACL LIST`, password hashes as digests);
- the protected tables' row count and checksum, and the sequences' health;
- once the agent's doors are open, how often the agent replaced each workload's pod (a rollout, a
  deleted pod: the brokered cluster counts them), for `never restarted`.

Protected tables are checksummed over the rows that existed at the baseline snapshot (the load
adds rows all the time) and over every column except sequence counters (`seq`, `last_seq`),
which a permitted renumbering may change; lost, altered or duplicated rows change the checksum.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from arenac.model.evidence import SequenceState, Snapshot, TableState
from arenac.model.plan import Plan
from arenac.model.redis_settings import ACL_PREFIX
from arenac.runner.harness_io import HarnessIO
from arenac.substrate.interface import LocalStack

_COUNTERS = ("seq", "last_seq")
# Redis config keys whose values are secrets: recorded as digests (a change still shows)
_REDIS_SECRETS = ("requirepass", "masterauth", "masteruser")
_SYSTEM_SCHEMAS = "('pg_catalog', 'information_schema', 'pg_toast')"


def take_snapshot(io: HarnessIO, plan: Plan, t: float, baseline_max_ids: dict[str, int] | None = None,
                  stack: LocalStack | None = None, agent_restarts: dict[str, int] | None = None,
                  configmap_data: Mapping[str, Mapping[str, object]] | None = None) -> Snapshot:
    """`stack` (the running LocalStack): also record what every workload's ConfigMap holds (`configmaps`;
    without it the snapshot has none, as a live check's snapshot needs none); `configmap_data`
    instead: the ConfigMaps' data as read from the API (component -> data: `configmaps_of`).
    `agent_restarts`: the agent's pod replacements per workload so far, once its doors are open
    (none before)."""
    if stack is not None and configmap_data is not None:
        raise ValueError("the ConfigMaps come from the stack's files or from the API, not both")
    config, events, release = {}, {}, {}
    for service in plan.snapshots.config:
        view = io.admin(service, "GET", "/admin/config")
        config[service] = {k: str(v) for k, v in sorted(view["config"].items()) if k != "RELEASE"}
        release[service] = view["release"]
        events[service] = sorted(name for name, on in io.admin(service, "GET", "/admin/event")["events"].items() if on)
    db_settings = {}
    for role, database, setting in io.query(
            "SELECT coalesce(r.rolname, ''), coalesce(d.datname, ''), unnest(s.setconfig) FROM pg_db_role_setting s "
            "LEFT JOIN pg_roles r ON r.oid = s.setrole LEFT JOIN pg_database d ON d.oid = s.setdatabase"):
        key, _, value = setting.partition("=")
        db_settings[f"{role or database}.{key}"] = value
    tables = {table: _table_state(io, table, (baseline_max_ids or {}).get(table)) for table in plan.snapshots.tables}
    sequences = {name: _sequence_state(io, name) for name in plan.snapshots.sequences}
    return Snapshot(t=round(t, 3), config=config, configmaps=(configmaps(stack) if stack is not None
                                                    else configmaps_of(configmap_data or {})),
                    events=events, release=release, db_settings=db_settings, app_role=io.substrate.app_role,
                    roles=roles(io),
                    memberships=memberships(io), privileges=privileges(io), redis=redis_state(io), tables=tables,
                    sequences=sequences, agent_restarts=agent_restarts)


def max_ids(io: HarnessIO, plan: Plan) -> dict[str, int]:
    return {table: int(io.query(f"SELECT coalesce(max(id), 0) FROM {table}")[0][0]) for table in plan.snapshots.tables}


def configmaps(stack: LocalStack) -> dict[str, dict[str, str]]:
    """What each workload's ConfigMap holds, which its next start reads: a ConfigMap edited but not
    rolled out changes nothing yet, and would surface only after a restart challenge. Each app
    service's config file, and Redis's (`maxmemory`, `maxmemoryPolicy`, `appendonly`,
    `appendfsync`, `acl-USER`: broker/cluster.py shows the same file). PostgreSQL's holds init
    scripts, which run at the first start only: not recorded (an edit changes nothing)."""
    substrate = stack.substrate
    return configmaps_of({name: substrate.read_config(stack.config_path(name))
                          for name in configmap_components(substrate)})


def configmap_components(substrate) -> tuple[str, ...]:
    """The components whose ConfigMap a snapshot records: every service's and Redis's (see `configmaps`)."""
    return (*substrate.services, "redis")


def configmaps_of(found: Mapping[str, Mapping[str, object]]) -> dict[str, dict[str, str]]:
    """The record of ConfigMap data (component -> key -> value), sorted, every value as text: a
    local stack's config files and the API's `data` give the same record for the same content."""
    return {name: {k: str(v) for k, v in sorted(data.items())} for name, data in sorted(found.items())}


# ---- PostgreSQL roles and privileges ---------------------------------------------------------
def roles(io: HarnessIO) -> dict[str, dict[str, object]]:
    """role -> attributes, for every role (the predefined pg_* ones too: an agent may be granted them)."""
    found = {}
    for (name, superuser, inherit, createrole, createdb, login, replication, bypassrls, limit, valid_until,
         password) in io.query(
            "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, "
            "rolbypassrls, rolconnlimit, coalesce(rolvaliduntil::text, ''), coalesce(rolpassword, '') "
            "FROM pg_authid ORDER BY rolname"):
        found[name] = {"superuser": superuser, "inherit": inherit, "createrole": createrole, "createdb": createdb,
                       "login": login, "replication": replication, "bypassrls": bypassrls,
                       "connection_limit": int(limit), "valid_until": valid_until, "password": _digest(password)}
    return found


def memberships(io: HarnessIO) -> dict[str, str]:
    """"MEMBER.ROLE" -> its options, over every grantor of the membership."""
    return {f"{member}.{role}": f"admin={_flag(admin)} inherit={_flag(inherit)} set={_flag(can_set)}"
            for member, role, admin, inherit, can_set in io.query(
                "SELECT m.rolname, r.rolname, bool_or(a.admin_option), bool_or(a.inherit_option), "
                "bool_or(a.set_option) FROM pg_auth_members a JOIN pg_roles m ON m.oid = a.member "
                "JOIN pg_roles r ON r.oid = a.roleid GROUP BY 1, 2 ORDER BY 1, 2")}


def privileges(io: HarnessIO) -> dict[str, dict[str, list[str]]]:
    """grantee -> object -> privileges ("INSERT", or "INSERT*" when grantable, as in an aclitem).
    Objects: a relation (`messages`, `other_schema.t` outside public), a column (`messages(body)`),
    `schema:NAME`, `database:NAME`. A NULL ACL means the owner's default privileges, which are spelt
    out (acldefault), so that a new owner shows as a change."""
    found: dict[str, dict[str, set[str]]] = {}
    relation = ("CASE WHEN n.nspname = 'public' THEN c.relname ELSE n.nspname || '.' || c.relname END")
    queries = (
        f"SELECT {relation}, x.grantee, x.privilege_type, x.is_grantable FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace, "
        "aclexplode(coalesce(c.relacl, acldefault((CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END)::\"char\", "
        "c.relowner))) x "
        f"WHERE n.nspname NOT IN {_SYSTEM_SCHEMAS} AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')",
        f"SELECT {relation} || '(' || a.attname || ')', x.grantee, x.privilege_type, x.is_grantable "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace, "
        "aclexplode(a.attacl) x "
        f"WHERE a.attacl IS NOT NULL AND n.nspname NOT IN {_SYSTEM_SCHEMAS} AND a.attnum > 0",
        "SELECT 'schema:' || n.nspname, x.grantee, x.privilege_type, x.is_grantable FROM pg_namespace n, "
        "aclexplode(coalesce(n.nspacl, acldefault('n'::\"char\", n.nspowner))) x "
        f"WHERE n.nspname NOT IN {_SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg_temp_%' "
        "AND n.nspname NOT LIKE 'pg_toast_temp_%'",
        "SELECT 'database:' || d.datname, x.grantee, x.privilege_type, x.is_grantable FROM pg_database d, "
        "aclexplode(coalesce(d.datacl, acldefault('d'::\"char\", d.datdba))) x WHERE d.datname = current_database()",
    )
    names = {int(oid): name for oid, name in io.query("SELECT oid, rolname FROM pg_roles")}
    for query in queries:
        for obj, grantee, privilege, grantable in io.query(query):
            who = names.get(int(grantee), "PUBLIC" if int(grantee) == 0 else f"oid:{grantee}")
            found.setdefault(who, {}).setdefault(obj, set()).add(privilege + ("*" if grantable else ""))
    return {who: {obj: sorted(privs) for obj, privs in sorted(objects.items())}
            for who, objects in sorted(found.items())}


# ---- Redis --------------------------------------------------------------------------------
def redis_state(io: HarnessIO) -> dict[str, str]:
    """Every config key (`maxmemory`, `appendonly`, ...) and `acl.USER` for every ACL user."""
    return {**redis_settings(io.redis("CONFIG", "GET", "*")), **redis_acl(io.redis("ACL", "LIST"))}


def redis_settings(reply: object) -> dict[str, str]:
    """Every setting of a `CONFIG GET *` reply (a flat list of key, value, ... under RESP2, a map
    under RESP3), secrets as digests. Everything, not only the settings a gate may name
    (RECORDED_SETTINGS): `changes only` must see whatever the agent changed. A setting this Redis
    does not have is absent (a guard on it fails), never a value it does not hold."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    elif isinstance(reply, list | tuple):
        pairs = list(zip(reply[::2], reply[1::2], strict=True))
    else:
        raise TypeError(f"CONFIG GET answered {type(reply).__name__}, not a list of settings")
    found = {_text(key): _text(value) for key, value in pairs}
    return {key: _digest(value) if key in _REDIS_SECRETS and value else value for key, value in sorted(found.items())}


def redis_acl(lines: object) -> dict[str, str]:
    """`acl.USER` -> the user's rules, sorted, out of an `ACL LIST` reply."""
    state = {}
    for line in lines if isinstance(lines, list | tuple) else ():
        words = _text(line).split()
        if len(words) >= 2 and words[0] == "user":
            # Redis lists the rules in the order they were added, which a restart may change: compare sets
            # (a password's hash `#...` as a shorter digest of it)
            rules = [f"#{_digest(w)[7:]}" if w.startswith("#") else w for w in words[2:]]
            state[f"{ACL_PREFIX}{words[1]}"] = " ".join(sorted(rules))
    return dict(sorted(state.items()))


# ---- data ---------------------------------------------------------------------------------
def _table_state(io: HarnessIO, table: str, upto: int | None) -> TableState:
    columns = [c for (c,) in io.query(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
        f"AND table_name = '{table}' ORDER BY ordinal_position") if c not in _COUNTERS]
    where = f"WHERE id <= {int(upto)}" if upto is not None else ""
    row = ", ".join(f"coalesce({c}::text, '')" for c in columns)
    rows, checksum = io.query(
        f"SELECT count(*), coalesce(md5(string_agg(concat_ws('|', {row}), E'\\n' ORDER BY id)), '') "
        f"FROM {table} {where}")[0]
    return TableState(rows=int(rows), checksum=checksum)


def _sequence_state(io: HarnessIO, name: str) -> SequenceState:
    table, column = name.split(".")
    groups, rows, duplicates, gaps = io.query(
        f"WITH s AS (SELECT channel_id, {column} AS v, count(*) AS n FROM {table} GROUP BY 1, 2), "
        f"g AS (SELECT channel_id, max(v) AS top, count(*) AS distinct_values FROM s GROUP BY 1) "
        f"SELECT (SELECT count(*) FROM g), (SELECT coalesce(sum(n), 0) FROM s), "
        f"(SELECT coalesce(sum(n - 1), 0) FROM s), (SELECT coalesce(sum(top - distinct_values), 0) FROM g)")[0]
    return SequenceState(groups=int(groups), rows=int(rows), duplicates=int(duplicates), gaps=int(gaps))


def _digest(value: str) -> str:
    """A secret as a short digest: a change shows, the secret does not land in the evidence."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16] if value else ""


def _flag(value) -> str:
    return "yes" if value else "no"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
