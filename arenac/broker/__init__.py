"""The agent's access tools on the local backend, brokered by the runner.

`open_broker(stack, surface, rbac_objects, tools=plan.tools, ...)` builds the pieces for one
episode: a `LocalCluster` (a Kubernetes-shaped view of the running LocalStack), the bundle's RBAC
(`Authorizer`, Kubernetes semantics), the `ToolBox` that decides every call, and the `Broker`
that serves it on a Unix socket with a per-episode token. `broker.install_tools(dir)` writes the
client commands the agent gets on PATH.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from arenac.broker.cluster import ClusterError, LocalCluster
from arenac.broker.outcome import ToolResult
from arenac.broker.podexec import default_exec_user
from arenac.broker.rbac import ApiRequest, Authorizer, agent_user, forbidden_message, load_rbac_dir, rbac_namespace
from arenac.broker.server import ActionLog, Broker
from arenac.broker.tools import TOOLS, ToolBox
from arenac.model.access import AccessSurface
from arenac.substrate.interface import LocalStack

__all__ = [
    "TOOLS", "ActionLog", "ApiRequest", "Authorizer", "Broker", "ClusterError", "LocalCluster", "ToolBox",
    "ToolResult", "agent_user", "default_exec_user", "forbidden_message", "load_rbac_dir", "open_broker",
]


def open_broker(
    stack: LocalStack,
    surface: AccessSurface,
    rbac_objects: Sequence[dict[str, Any]],
    *,
    tools: Sequence[str] = TOOLS,
    time_scale: float = 1.0,
    on_action: Callable[[dict[str, Any]], None] | None = None,
    on_declare: Callable[[], None] | None = None,
    clock: Callable[[], float] | None = None,
    exec_user: str | None = None,
    max_wait: float = 600.0,
) -> Broker:
    """A broker for one episode over a running stack (not started: call `start()`).
    `exec_user` runs `kubectl exec` commands (default: LocalCluster's, nobody when running as root)."""
    namespace = rbac_namespace(rbac_objects)
    cluster = (LocalCluster(stack, namespace=namespace) if exec_user is None
               else LocalCluster(stack, namespace=namespace, exec_user=exec_user))
    authorizer = Authorizer(rbac_objects, agent_user(rbac_objects), namespace)
    toolbox = ToolBox(cluster, surface, rbac_objects, authorizer=authorizer, time_scale=time_scale,
                      on_declare=on_declare, max_wait=max_wait)
    return Broker(toolbox, tools=tools, on_action=on_action, clock=clock)
