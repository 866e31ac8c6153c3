"""The config keys a guard may read, and their kinds.

Contract: `observed_key_type(target, span_node, ctx)` is the `KeyType` of a `config(SERVICE.KEY)`
target a guard reads, or None after reporting why a guard cannot read it (E0305: not one key,
`SERVICE.KEY`; a datastore's ConfigMap, which is not observed while the task runs: the hint names
the live value to guard instead). `GUARD_KINDS` are the target kinds a guard compares.
`event_state_ok(op, bound, node, ctx)`: an `event(SERVICE.NAME)` reads `on` or `off` (whether the
service's admin API has it switched on), so it compares with one of them by == or != (E0326).
`role_attribute_ok(target, node, ctx)`: a guard on a role reads one attribute of it
(`role(spine_app.connection_limit)`: E0305 for the whole role).
"""

from __future__ import annotations

from arenac.lower.config_keys import KeyType, key_type
from arenac.lower.exprs import ExprContext
from arenac.model.actions import Target
from arenac.syntax import ast

GUARD_KINDS = ("config", "db_setting", "redis", "release", "event", "role")
EVENT_STATES = ("on", "off")


def role_attribute_ok(target: Target, node: ast.Expr, ctx: ExprContext) -> bool:
    if "." in target.ref:
        return True
    ctx.collector.error("E0305", "a guard reads one attribute of a role", node.span,
                        f"e.g. role({target.ref}.connection_limit)")
    return False


def event_state_ok(op: str, bound: ast.Expr | None, node: ast.Comparison, ctx: ExprContext) -> bool:
    """Whether an event guard's comparison is `event(...) ==|!= on|off`; else reports E0326 at `node`."""
    if op in ("==", "!=") and isinstance(bound, ast.Ref) and bound.text in EVENT_STATES:
        return True
    ctx.collector.error("E0326", "an event is on or off: a guard compares it with `on` or `off`, by == or !=",
                        node.span, "e.g. `guard event(channel.read_consistency_strict) == off at declaration`")
    return False


def observed_key_type(target: Target, node: ast.Expr, ctx: ExprContext) -> KeyType | None:
    """The kind of the config key `target` (`node` is where the guard names it); None after an error."""
    parts = target.ref.split(".")
    if len(parts) != 2:
        ctx.collector.error("E0305", "a guard compares one config key, SERVICE.KEY", node.span,
                            f"e.g. config({parts[0]}.DB_POOL_SIZE)")
        return None
    service, key = parts
    described = ctx.substrate.service(service)
    assert described is not None  # resolve_target checked the service
    if described.kind != "app":
        # only app services' config is snapshotted (through their admin API); a datastore's
        # ConfigMap is not, so such a guard could never be seen to hold
        observed = {"redis": f"redis({key})"}.get(service, "db_setting(NAME)")
        ctx.collector.error("E0305", f"config({target.ref}) is {service}'s ConfigMap, which is not observed while "
                            "the task runs", node.span, f"guard the live value instead: {observed}")
        return None
    return key_type(key, described.config[key])
