"""Resolve the targets gates name (`config(message.DB_POOL_SIZE)`, `table(messages)`,
`grant(messages, INSERT)`, `role(spine_app.superuser)`, ...) against the substrate descriptor.

Contract: `targets(call, ctx)` lowers one target call to its `Target`s (several names of one kind,
or a grant's table and privileges, each a target) and `one_target` to exactly one, as guards and
invariants need; `resolve_target` checks that one name is something the substrate has. Each
reports what is wrong into the context's collector (E0203 unknown name, E0204 unknown kind,
E0205/E0206 arguments, E0512 a grant without privilege, E0214 a `redis(KEY)` that no snapshot
records: model/redis_settings.py) and returns None or False.
"""

from __future__ import annotations

from arenac.core.diagnostics import did_you_mean
from arenac.lower.exprs import ExprContext
from arenac.model.actions import Target
from arenac.model.redis_settings import ACL_PREFIX, RECORDED_SETTINGS, is_redis_acl
from arenac.syntax import ast

TARGET_KINDS = ("config", "event", "release", "db_setting", "grant", "table", "redis", "session", "sequence",
                "role", "membership")
# privileges on a table (PostgreSQL's names); `grant(TABLE, PRIVILEGE, ...)` names them
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER", "MAINTAIN")
# a role's attributes as snapshots record them (role(ROLE.ATTRIBUTE))
ROLE_ATTRIBUTES = ("superuser", "inherit", "createrole", "createdb", "login", "replication", "bypassrls",
                   "connection_limit", "valid_until", "password")
_EXAMPLE_TARGETS = {"config": "message.DB_POOL_SIZE", "event": "channel.read_consistency_strict",
                    "table": "messages", "sequence": "messages.seq", "release": "message",
                    "role": "spine_app", "membership": "spine_app", "redis": "maxmemory"}


def one_target(call: ast.Call, ctx: ExprContext, kinds: tuple[str, ...] = TARGET_KINDS,
               kind_override: str | None = None) -> Target | None:
    """Exactly one target, as guards and invariants need; None after an error."""
    if len(call.args) != 1:
        ctx.collector.error("E0305", f"{kind_override or call.func.text}(...) takes one name here", call.span)
        return None
    found = targets(call, ctx, kinds, kind_override)
    return found[0] if found else None


def targets(call: ast.Call, ctx: ExprContext, kinds: tuple[str, ...] = TARGET_KINDS,
            kind_override: str | None = None) -> list[Target] | None:
    """`config(a.X, b.Y)` names several targets of one kind; None after an error."""
    kind = kind_override or call.func.text
    if kind not in kinds:
        ctx.collector.error("E0204", f"unknown target kind '{kind}'", call.func.span,
                            did_you_mean(kind, kinds) or f"expected one of: {', '.join(kinds)}")
        return None
    if kind == "grant":
        return _grant_targets(call, ctx)
    found = []
    for arg in call.args:
        ref = ctx.bind(arg.alternatives[0])
        if arg.name is not None or len(arg.alternatives) != 1 or not isinstance(ref, ast.Ref):
            ctx.collector.error("E0305", f"{kind}(...) takes names such as {_EXAMPLE_TARGETS.get(kind, 'x')}",
                                arg.span)
            return None
        if not resolve_target(kind, ref, ctx):
            return None
        found.append(Target(kind=kind, ref=ref.text))
    if not found:
        ctx.collector.error("E0206", f"{kind}(...) needs a name", call.span)
        return None
    return found


def _grant_targets(call: ast.Call, ctx: ExprContext) -> list[Target] | None:
    """`grant(TABLE, PRIVILEGE, ...)`: exactly those privileges of the application role on TABLE
    (grant(TABLE.PRIVILEGE) each); `grant(TABLE.COLUMN, PRIVILEGE, ...)` those on one column, as
    snapshots record a column's privileges (grant(TABLE(COLUMN).PRIVILEGE)). Without a privilege it
    would permit any, `GRANT ALL` included: E0512."""
    names = []
    for arg in call.args:
        ref = ctx.bind(arg.alternatives[0])
        if arg.name is not None or len(arg.alternatives) != 1 or not isinstance(ref, ast.Ref):
            ctx.collector.error("E0305", "grant(...) takes a table and privileges, such as grant(messages, INSERT)",
                                arg.span)
            return None
        names.append(ref)
    if not names:
        ctx.collector.error("E0206", "grant(...) needs a table and a privilege", call.span)
        return None
    table, privileges = names[0], names[1:]
    if len(table.parts) > 2:
        ctx.collector.error("E0305", "grant(...) takes a table or one column of it, such as "
                            "grant(messages.body, UPDATE)", table.span)
        return None
    column = table.parts[1] if len(table.parts) == 2 else None
    table = ast.Ref(table.parts[:1], table.span)
    if not resolve_target("grant", table, ctx):
        return None
    on = f"{table.text}({column})" if column else table.text
    if not privileges:
        ctx.collector.error("E0512", f"grant({table.text}) names no privilege, so it would permit any, "
                            "`GRANT ALL` included", call.span,
                            f"name the privileges the repair grants, e.g. grant({on}, INSERT)")
        return None
    found = []
    for privilege in privileges:
        word = privilege.text.upper()
        if word not in PRIVILEGES:
            ctx.collector.error("E0203", f"unknown privilege '{privilege.text}'", privilege.span,
                                did_you_mean(word, PRIVILEGES) or f"privileges: {', '.join(PRIVILEGES)}")
            return None
        found.append(Target(kind="grant", ref=f"{on}.{word}"))
    return found


def resolve_target(kind: str, ref: ast.Ref, ctx: ExprContext) -> bool:
    """Check that a target names something the substrate has; report otherwise."""
    substrate = ctx.substrate
    errors = ctx.collector
    parts = ref.parts
    if kind in ("config", "event", "release"):
        service = substrate.service(parts[0])
        if service is None:
            errors.error("E0203", f"unknown service '{parts[0]}'", ref.span,
                         did_you_mean(parts[0], [s.name for s in substrate.services]))
            return False
        if kind == "config" and len(parts) > 1 and parts[1] not in service.config:
            errors.error("E0203", f"service '{service.name}' has no config key '{parts[1]}'", ref.span,
                         did_you_mean(parts[1], service.config))
            return False
        if kind == "event" and (len(parts) != 2 or parts[1] not in service.events):
            errors.error("E0203", f"service '{service.name}' has no event '{'.'.join(parts[1:])}'", ref.span,
                         did_you_mean(".".join(parts[1:]), service.events)
                         or f"its events: {', '.join(service.events) or 'none'}")
            return False
    elif kind in ("table", "grant"):
        tables = [t.name for t in substrate.tables]
        if ref.text not in tables:
            errors.error("E0203", f"unknown table '{ref.text}'", ref.span, did_you_mean(ref.text, tables))
            return False
    elif kind in ("role", "membership"):
        roles = list(substrate.db_roles)
        if parts[0] not in roles:
            errors.error("E0203", f"unknown database role '{parts[0]}'", ref.span, did_you_mean(parts[0], roles))
            return False
        rest = ".".join(parts[1:])
        if kind == "role" and rest and rest not in ROLE_ATTRIBUTES:
            errors.error("E0203", f"unknown role attribute '{rest}'", ref.span,
                         did_you_mean(rest, ROLE_ATTRIBUTES) or f"attributes: {', '.join(ROLE_ATTRIBUTES)}")
            return False
        if kind == "membership" and rest and rest not in roles and not rest.startswith("pg_"):
            errors.error("E0203", f"unknown database role '{rest}'", ref.span, did_you_mean(rest, roles))
            return False
    elif kind == "redis":
        return _recorded_redis_key(ref, ctx)
    elif kind == "sequence":
        sequences = [s.name for s in substrate.sequences]
        if ref.text not in sequences:
            errors.error("E0203", f"unknown sequence '{ref.text}'", ref.span, did_you_mean(ref.text, sequences))
            return False
    return True


def _recorded_redis_key(ref: ast.Ref, ctx: ExprContext) -> bool:
    """`redis(KEY)` names a setting snapshots record or `acl.USER` of a Redis user (E0214 otherwise):
    anything else is absent from every snapshot, so a guard on it could never hold and a `changes
    only` naming it would permit nothing."""
    key = ref.text
    users = ctx.substrate.redis_acl_users
    if is_redis_acl(key):
        user = key.removeprefix(ACL_PREFIX)
        if user in users:
            return True
        ctx.collector.error("E0214", f"redis({key}): snapshots record no Redis ACL user '{user}'", ref.span,
                            did_you_mean(user, users) or f"the users: {', '.join(users) or 'none'}")
        return False
    if key in RECORDED_SETTINGS:
        return True
    known = (*RECORDED_SETTINGS, *(ACL_PREFIX + user for user in users))
    close = did_you_mean(key, known)
    listed = f"snapshots record {', '.join(RECORDED_SETTINGS)} and acl.USER (users: {', '.join(users) or 'none'})"
    ctx.collector.error("E0214", f"redis({key}) is not a Redis setting snapshots record, so no gate could see it",
                        ref.span, f"{close} {listed}" if close else listed)
    return False
