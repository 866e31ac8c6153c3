"""Actions: the typed steps that inject and repair faults.

A fault template lists, per layer, the actions that inject the fault and those that
repair it. Each action says what it needs (`requirements`: the alternatives of
permissions by which it can be carried out, in order of preference) and what it
changes (`touches`: targets in the vocabulary of the safety gate). The compiler
picks the first channel the variant's access surface permits; the runner and the
generated `solve.sh` carry the action out through that channel.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal, Union

from pydantic import Field

from arenac.model.base import Model


class Target(Model):
    """Something a safety gate can name: config(message.DB_POOL_SIZE), table(messages)..."""

    kind: Literal["config", "event", "release", "db_setting", "grant", "table", "redis", "session", "sequence",
                  "role", "membership"]
    ref: str

    def __str__(self) -> str:
        return f"{self.kind}({self.ref})"

    def covers(self, other: "Target") -> bool:
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
    """Set a Helm value of the substrate chart at install time (config-layer injection)."""

    kind: Literal["values"] = "values"
    path: str
    value: str | int | float | bool


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

Action = Annotated[
    Union[ValuesAction, KubectlAction, AdminAction, SqlAction, RedisAction, SendBurstAction],
    Field(discriminator="kind"),
]


def touched_targets(actions: Iterable[Action]) -> tuple[Target, ...]:
    """What a list of actions (a repair, or an injection) changes, in safety-gate vocabulary:
    sorted, each target once. The compiler records it per fault; the runner logs it for every
    harness action taken while the agent works."""
    found: list[Target] = []
    for action in actions:
        if isinstance(action, KubectlAction):
            if action.verb == "patch_configmap":
                found += [Target(kind="config", ref=f"{action.service}.{key}") for key in action.data]
            elif action.verb == "set_image":
                found.append(Target(kind="release", ref=action.service))
        elif isinstance(action, AdminAction):
            if action.path == "/admin/config":
                found += [Target(kind="config", ref=f"{action.service}.{key}") for key in action.body]
            elif action.path == "/admin/event":
                found.append(Target(kind="event", ref=f"{action.service}.{action.body.get('name')}"))
        elif isinstance(action, (SqlAction, RedisAction)):
            found += list(action.touches)
    unique: dict[str, Target] = {str(t): t for t in found}
    return tuple(unique[k] for k in sorted(unique))
