"""Bind actions to channels: which surface permission carries each action out.

Each action kind has channels in order of preference (an admin call goes through the
brokered admin API, else through exec into the service; SQL through the granted
database role, else through exec into postgres). `bind` returns the first channel the
access surface fully permits, or the reason none does.
"""

from __future__ import annotations

from arenac.model.access import AccessSurface, AdminNeed, Channel, DbNeed, ExecNeed, KubeNeed
from arenac.model.actions import AdminAction, KubectlAction, RedisAction, SqlAction
from arenac.model.substrate import Substrate


def channels_for(action, substrate: Substrate) -> list[Channel]:
    if isinstance(action, KubectlAction):
        service = substrate.service(action.service)
        workload = service.workload if service else action.service
        needs = {
            "patch_configmap": [KubeNeed(api_group="", resource="configmaps", verb="patch",
                                         name=service.configmap if service else None)],
            "rollout_restart": [KubeNeed(api_group="apps", resource=_workload_resource(service), verb="patch",
                                         name=workload)],
            "set_image": [KubeNeed(api_group="apps", resource=_workload_resource(service), verb="patch",
                                   name=workload)],
            "scale": [KubeNeed(api_group="apps", resource=_workload_resource(service) + "/scale", verb="patch",
                               name=workload)],
            "delete_pods": [KubeNeed(api_group="", resource="pods", verb="list"),
                            KubeNeed(api_group="", resource="pods", verb="delete")],
        }[action.verb]
        return [Channel(name="kubectl", needs=tuple(needs))]
    if isinstance(action, AdminAction):
        return [
            Channel(name="admin_api", needs=(AdminNeed(service=action.service, path=action.path),)),
            Channel(name="exec", needs=(ExecNeed(workload=action.service),)),
        ]
    if isinstance(action, SqlAction):
        return [
            Channel(name="db_role", needs=(DbNeed(role=action.role),)),
            Channel(name="exec", needs=(ExecNeed(workload="postgres"),)),
        ]
    if isinstance(action, RedisAction):
        return [Channel(name="exec", needs=(ExecNeed(workload="redis"),))]
    raise TypeError(f"no channel for {action!r}")


def _workload_resource(service) -> str:
    return "statefulsets" if service is not None and service.workload_kind == "StatefulSet" else "deployments"


def permits(surface: AccessSurface, need, substrate: Substrate) -> bool:
    if isinstance(need, KubeNeed):
        return any(rule.permits(need) for rule in surface.kube)
    if isinstance(need, AdminNeed):
        return need.path in surface.admin_paths(need.service)
    if isinstance(need, DbNeed):
        return surface.db_role is not None and substrate.role_includes(surface.db_role, need.role)
    if isinstance(need, ExecNeed):
        return need.workload in surface.exec_into
    return False


def bind(action, surface: AccessSurface, substrate: Substrate) -> tuple[Channel | None, str | None]:
    """The first permitted channel, or (None, reason)."""
    options = channels_for(action, substrate)
    for channel in options:
        if all(permits(surface, need, substrate) for need in channel.needs):
            return channel, None
    first_missing = [need.describe() for need in options[0].needs if not permits(surface, need, substrate)]
    alternatives = "" if len(options) == 1 else f" (or {options[1].needs[0].describe()})"
    return None, f"needs {', '.join(first_missing)}{alternatives}, which access '{surface.name}' does not grant"
