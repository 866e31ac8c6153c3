"""Actions: the typed steps that inject and repair faults.

A fault template lists, per layer, the actions that inject the fault and those that
repair it. Each action says what it needs (`requirements`: the alternatives of
permissions by which it can be carried out, in order of preference) and what it
changes (`touches`: targets in the vocabulary of the safety gate). The compiler
picks the first channel the variant's access surface permits; the runner and the
generated `solve.sh` carry the action out through that channel.

`dispatch(action, handler)` is the one place that tells the kinds apart: every consumer of
the union (the channels, the oracle's commands, the static checks, the harness's executor,
`touched_targets` here) is an `ActionHandler` with one method per kind. A new kind added to
`AnyAction` fails type checking in `dispatch` (its `assert_never`) until it gets a case there,
which calls a new method of the protocol, which then fails type checking in every consumer
that does not define it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import Annotated, Final, Literal, Protocol, TypeVar, assert_never

from pydantic import Field, field_validator

from arenac.model.base import Model
from arenac.model.redis_settings import ACL_PREFIX, RECORDED_SETTINGS, is_redis_acl


class Target(Model):
    """Something a safety gate can name: config(message.DB_POOL_SIZE), table(messages)..."""

    kind: Literal["config", "event", "release", "db_setting", "grant", "table", "redis", "session", "sequence",
                  "role", "membership"]
    ref: str

    def __str__(self) -> str:
        return f"{self.kind}({self.ref})"

    def covers(self, other: Target) -> bool:
        """A permitted target covers another if they are equal, or the permitted one is a
        whole service / table / role (`config(message)` covers `config(message.DB_POOL_SIZE)`,
        `role(spine_app)` covers `role(spine_app.superuser)`). Refs of the snapshot's items:
        grant(TABLE.PRIVILEGE) for the application role, grant(TABLE.PRIVILEGE@GRANTEE) for any
        other (`@` is never a prefix step, so `grant(messages.INSERT)` covers no other grantee),
        role(ROLE.ATTRIBUTE), membership(MEMBER.ROLE), redis(CONFIG-KEY), redis(acl.USER)."""
        if self.kind != other.kind:
            return False
        return other.ref == self.ref or other.ref.startswith(self.ref + ".")


class ValuesAction(Model):
    """Set a Helm value of the substrate chart at install time (config-layer injection).

    `touches` declares the recorded state the chart value becomes once the stack runs, for a value
    whose path does not say it (`injected_targets` derives `services.S.config.K` and
    `services.S.release` itself): `redis.maxmemory` becomes Redis's live setting
    `redis(maxmemory)`. Only kinds the snapshots hold (`HELD_KINDS`) may be declared, and a Redis
    target only for a recorded setting (`RECORDED_SETTINGS`) or an ACL user (`acl.USER`): anything
    else names state no snapshot holds, and the library refuses it when it loads. Left out of the
    serialised action when empty, so that a value without it reads as before."""

    kind: Literal["values"] = "values"
    path: str
    value: str | int | float | bool
    touches: tuple[Target, ...] = Field(default=(), exclude_if=lambda touches: not touches)

    @field_validator("touches")
    @classmethod
    def _touches_recorded_state(cls, touches: tuple[Target, ...]) -> tuple[Target, ...]:
        for target in touches:
            if target.kind not in HELD_KINDS:
                raise ValueError(f"a chart value cannot touch {target}: the state snapshots hold no "
                                 f"'{target.kind}' item (they hold {', '.join(sorted(HELD_KINDS))})")
            if target.kind == "redis" and not (target.ref in RECORDED_SETTINGS or is_redis_acl(target.ref)):
                raise ValueError(f"a chart value cannot touch {target}: '{target.ref}' is not a Redis setting the "
                                 f"snapshots record ({', '.join(RECORDED_SETTINGS)}) nor an ACL user "
                                 f"({ACL_PREFIX}USER)")
        return touches


class KubectlAction(Model):
    kind: Literal["kubectl"] = "kubectl"
    verb: Literal["patch_configmap", "rollout_restart", "set_image", "delete_pods", "scale"]
    service: str
    data: dict[str, str] = Field(default_factory=dict)  # patch_configmap: key -> value
    release: str | None = None  # set_image
    replicas: int | None = None  # scale


class AdminAction(Model):
    kind: Literal["admin"] = "admin"
    service: str
    method: Literal["GET", "POST"] = "POST"
    path: str
    body: dict[str, str | int | float | bool] = Field(default_factory=dict)


class SqlAction(Model):
    kind: Literal["sql"] = "sql"
    role: str
    statement: str
    hold_open: bool = False  # keep the session (and its locks) open: used by injectors only
    touches: tuple[Target, ...] = ()


class RedisAction(Model):
    kind: Literal["redis"] = "redis"
    command: tuple[str, ...]
    touches: tuple[Target, ...] = ()


class SendBurstAction(Model):
    """A burst of concurrent sends to one channel through the substrate's public API (a bot
    posting a thread). A workload trigger that the harness fires at the onset and on retrigger,
    for faults that show only under concurrency; never part of a repair."""

    kind: Literal["send_burst"] = "send_burst"
    channel: str
    messages: int = Field(ge=1, le=1000)
    concurrency: int = Field(ge=1, le=64)


# actions the harness alone performs: they may inject or retrigger a fault, never repair one
HARNESS_ONLY = (ValuesAction, SendBurstAction)

AnyAction = ValuesAction | KubectlAction | AdminAction | SqlAction | RedisAction | SendBurstAction
Action = Annotated[AnyAction, Field(discriminator="kind")]

Result = TypeVar("Result")
Result_co = TypeVar("Result_co", covariant=True)


class ActionHandler(Protocol[Result_co]):
    """What one consumer does with each kind of action: one method per kind, all required (a
    consumer subclasses it: the type checker, and at run time instantiation, refuse one that
    leaves a method out)."""

    @abstractmethod
    def on_values(self, action: ValuesAction) -> Result_co: ...
    @abstractmethod
    def on_kubectl(self, action: KubectlAction) -> Result_co: ...
    @abstractmethod
    def on_admin(self, action: AdminAction) -> Result_co: ...
    @abstractmethod
    def on_sql(self, action: SqlAction) -> Result_co: ...
    @abstractmethod
    def on_redis(self, action: RedisAction) -> Result_co: ...
    @abstractmethod
    def on_send_burst(self, action: SendBurstAction) -> Result_co: ...


def dispatch(action: AnyAction, handler: ActionHandler[Result]) -> Result:
    """The handler's method for the action's kind, called with the action."""
    match action:
        case ValuesAction():
            return handler.on_values(action)
        case KubectlAction():
            return handler.on_kubectl(action)
        case AdminAction():
            return handler.on_admin(action)
        case SqlAction():
            return handler.on_sql(action)
        case RedisAction():
            return handler.on_redis(action)
        case SendBurstAction():
            return handler.on_send_burst(action)
        case _:
            assert_never(action)


def touched_targets(actions: Iterable[AnyAction]) -> tuple[Target, ...]:
    """What a list of actions (a repair, or an injection) changes, in safety-gate vocabulary:
    sorted, each target once. The compiler records it per fault; the runner logs it for every
    harness action taken while the agent works."""
    found = [target for action in actions for target in dispatch(action, _Touches())]
    unique: dict[str, Target] = {str(t): t for t in found}
    return tuple(unique[k] for k in sorted(unique))


def injected_targets(inject: tuple[AnyAction, ...]) -> tuple[Target, ...]:
    """What an injection changes: `touched_targets` of its actions, and for the chart values it sets
    (which touch nothing the agent could watch change), the state they become: what the action
    declares (`touches`: `redis.maxmemory` is redis(maxmemory)), and the key or release a service's
    value sets: `services.S.config.K` is config(S.K), `services.S.release` is release(S)."""
    found = list(touched_targets(inject))
    for action in inject:
        if not isinstance(action, ValuesAction):
            continue
        found.extend(action.touches)
        if action.path.startswith("services."):
            service, _, rest = action.path[len("services."):].partition(".")
            if rest.startswith("config."):
                found.append(Target(kind="config", ref=f"{service}.{rest[len('config.'):]}"))
            elif rest == "release":
                found.append(Target(kind="release", ref=service))
    unique = {str(target): target for target in found}
    return tuple(unique[key] for key in sorted(unique))


def config_values(actions: Iterable[AnyAction]) -> dict[str, str]:
    """The config keys the actions set to a literal value: `str(config(S.K))` -> the value as text,
    the last one set winning. A chart value `services.S.config.K`, a ConfigMap patch and an
    `/admin/config` body set one; nothing else does. The compiler compares a repair's with its
    injection's: a key the injection set to the very value the repair writes is not changed by the
    repair (render/bundle_files.py `oracle_repairs`)."""
    found: dict[str, str] = {}
    for action in actions:
        if isinstance(action, ValuesAction) and action.path.startswith("services."):
            service, _, rest = action.path[len("services."):].partition(".")
            if rest.startswith("config."):
                found[str(Target(kind="config", ref=f"{service}.{rest[len('config.'):]}"))] = str(action.value)
        elif isinstance(action, KubectlAction) and action.verb == "patch_configmap":
            found.update({str(Target(kind="config", ref=f"{action.service}.{key}")): value
                          for key, value in action.data.items()})
        elif isinstance(action, AdminAction) and action.path == "/admin/config":
            found.update({str(Target(kind="config", ref=f"{action.service}.{key}")): str(value)
                          for key, value in action.body.items()})
    return found


def same_setting(first: str, second: str) -> bool:
    """Two config values as a service reads them: equal as numbers when both are (`6` and `6.0`),
    else as text."""
    try:
        return float(first) == float(second)
    except ValueError:
        return first == second


# The kinds of target the state snapshots hold an item for (config, event, release, database and
# Redis settings, grants, roles, memberships, sequences): whether such a target changed can be read
# from two snapshots. A `session` (a connection killed) or `table` target leaves no such item.
HELD_KINDS: Final = frozenset({"config", "event", "release", "db_setting", "grant", "role", "membership", "redis",
                               "sequence"})


def held(targets: Iterable[Target]) -> tuple[Target, ...]:
    """The targets whose state the snapshots hold (HELD_KINDS), in their order."""
    return tuple(target for target in targets if target.kind in HELD_KINDS)


class _Touches(ActionHandler[tuple[Target, ...]]):
    """The safety-gate targets one action changes."""

    def on_values(self, action: ValuesAction) -> tuple[Target, ...]:
        return ()  # set at install, before anything is watched (`injected_targets` reads its `touches`)

    def on_kubectl(self, action: KubectlAction) -> tuple[Target, ...]:
        if action.verb == "patch_configmap":
            return tuple(Target(kind="config", ref=f"{action.service}.{key}") for key in action.data)
        if action.verb == "set_image":
            return (Target(kind="release", ref=action.service),)
        return ()  # a restart, a scale or a pod deletion changes no state a gate names

    def on_admin(self, action: AdminAction) -> tuple[Target, ...]:
        if action.path == "/admin/config":
            return tuple(Target(kind="config", ref=f"{action.service}.{key}") for key in action.body)
        if action.path == "/admin/event":
            return (Target(kind="event", ref=f"{action.service}.{action.body.get('name')}"),)
        return ()

    def on_sql(self, action: SqlAction) -> tuple[Target, ...]:
        return action.touches  # SQL says what it changes: the template declares it

    def on_redis(self, action: RedisAction) -> tuple[Target, ...]:
        return action.touches

    def on_send_burst(self, action: SendBurstAction) -> tuple[Target, ...]:
        return ()  # workload, not a change of state
