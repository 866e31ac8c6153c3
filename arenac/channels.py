"""Bind actions to channels: which surface permission carries each action out.

Each action kind has channels in order of preference (an admin call goes through the
brokered admin API, else through exec into the service; SQL through the granted
database role, else through exec into postgres). `bind` returns the first channel the
access surface fully permits, or the reason none does. Kubernetes needs are decided by
the one RBAC matcher (`arenac.model.rbac`, through the surface's `KubeRule.permits`).
"""

from __future__ import annotations

from typing import assert_never

from arenac.model.access import AccessSurface, AdminNeed, Channel, DbNeed, ExecNeed, KubeNeed, Need
from arenac.model.actions import (
    ActionHandler,
    AdminAction,
    AnyAction,
    KubectlAction,
    RedisAction,
    SendBurstAction,
    SqlAction,
    ValuesAction,
    dispatch,
)
from arenac.model.substrate import Service, Substrate


def channels_for(action: AnyAction, substrate: Substrate) -> list[Channel]:
    """The channels that can carry the action out, in order of preference."""
    return dispatch(action, _Channels(substrate))


class _Channels(ActionHandler[list[Channel]]):
    def __init__(self, substrate: Substrate) -> None:
        self.substrate = substrate

    def on_kubectl(self, action: KubectlAction) -> list[Channel]:
        service = self.substrate.service(action.service)
        return [Channel(name="kubectl", needs=tuple(_kubectl_needs(action, service)))]

    def on_admin(self, action: AdminAction) -> list[Channel]:
        return [
            Channel(name="admin_api", needs=(AdminNeed(service=action.service, path=action.path),)),
            Channel(name="exec", needs=(ExecNeed(workload=action.service),)),
        ]

    def on_sql(self, action: SqlAction) -> list[Channel]:
        return [
            Channel(name="db_role", needs=(DbNeed(role=action.role),)),
            Channel(name="exec", needs=(ExecNeed(workload="postgres"),)),
        ]

    def on_redis(self, action: RedisAction) -> list[Channel]:
        return [Channel(name="exec", needs=(ExecNeed(workload="redis"),))]

    # the harness alone performs these (HARNESS_ONLY): no agent channel carries them
    def on_values(self, action: ValuesAction) -> list[Channel]:
        raise TypeError(f"no channel for {action!r}")

    def on_send_burst(self, action: SendBurstAction) -> list[Channel]:
        raise TypeError(f"no channel for {action!r}")


def _kubectl_needs(action: KubectlAction, service: Service | None) -> list[KubeNeed]:
    workload = service.workload if service else action.service
    resource = _workload_resource(service)
    if action.verb == "patch_configmap":
        return [KubeNeed(api_group="", resource="configmaps", verb="patch",
                         name=service.configmap if service else None)]
    if action.verb in ("rollout_restart", "set_image"):
        return [KubeNeed(api_group="apps", resource=resource, verb="patch", name=workload)]
    if action.verb == "scale":
        return [KubeNeed(api_group="apps", resource=resource + "/scale", verb="patch", name=workload)]
    return [KubeNeed(api_group="", resource="pods", verb="list"),  # delete_pods: find them, then delete
            KubeNeed(api_group="", resource="pods", verb="delete")]


def _workload_resource(service: Service | None) -> str:
    return "statefulsets" if service is not None and service.workload_kind == "StatefulSet" else "deployments"


def permits(surface: AccessSurface, need: Need, substrate: Substrate) -> bool:
    match need:
        case KubeNeed():
            return any(rule.permits(need) for rule in surface.kube)
        case AdminNeed():
            return need.path in surface.admin_paths(need.service)
        case DbNeed():
            return surface.db_role is not None and substrate.role_includes(surface.db_role, need.role)
        case ExecNeed():
            return need.workload in surface.exec_into
        case _:
            assert_never(need)


def bind(action: AnyAction, surface: AccessSurface, substrate: Substrate) -> tuple[Channel | None, str | None]:
    """The first permitted channel, or (None, reason)."""
    options = channels_for(action, substrate)
    for channel in options:
        if all(permits(surface, need, substrate) for need in channel.needs):
            return channel, None
    first_missing = [need.describe() for need in options[0].needs if not permits(surface, need, substrate)]
    alternatives = "" if len(options) == 1 else f" (or {options[1].needs[0].describe()})"
    return None, f"needs {', '.join(first_missing)}{alternatives}, which access '{surface.name}' does not grant"
