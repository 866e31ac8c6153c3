"""What the broker tests share (the fixtures that use it are in conftest.py): the agent's user name,
the library's access profiles, kubectl's Forbidden message, RBAC objects written by hand, a real
spine stack started and stopped, and `Episode`, a broker over such a stack with its client tools
installed (`Episode.run` goes through the installed executables and the Unix socket, as an agent
would; `Episode.call` calls the broker in-process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenac.broker import Broker, ToolResult
from arenac.broker.cluster import LocalCluster
from arenac.lower.library import load_library
from arenac.model.access import AccessSurface
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from substrate.spine_client import assert_gone, ports_of

USER = "system:serviceaccount:arenac:arenac-agent"


def profile(name: str) -> AccessSurface:
    return load_library().substrates["spine"].access[name]


def forbidden(verb: str, resource: str, name: str = "", group: str = "", namespace: str = "arenac") -> str:
    qualified = resource.split("/")[0] + (f".{group}" if group else "")
    subject = f'{qualified} "{name}"' if name else qualified
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (f'Error from server (Forbidden): {subject} is forbidden: User "{USER}" cannot {verb} resource '
            f'"{resource}" in API group "{group}" {where}')


def start_stack(spec: SpineSpec | None = None) -> SpineStack:
    """A stack in its own directory outside pytest's basetemp: a pytest session starting meanwhile
    (another checkout's) resets /tmp/pytest-of-<user> to 0700, which the PostgreSQL server user,
    running as another user, then cannot traverse."""
    stack = SpineStack(Path(tempfile.mkdtemp(prefix="arenac-broker-test-")), spec or SpineSpec())
    try:
        stack.start()
    except BaseException:
        shutil.rmtree(stack.data_dir, ignore_errors=True)
        raise
    return stack


def stop_stack(stack: SpineStack) -> None:
    endpoints, pids = stack.endpoints, list(stack.pids().values())
    stack.stop()
    shutil.rmtree(stack.data_dir, ignore_errors=True)
    if endpoints is not None:
        assert_gone(pids, ports_of(endpoints))


@dataclass
class Episode:
    broker: Broker
    tools_dir: Path
    actions: list[dict[str, Any]] = field(default_factory=list)
    declared: list[float] = field(default_factory=list)

    @property
    def cluster(self) -> LocalCluster:
        return self.broker.toolbox.cluster

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.tools_dir}:{os.environ['PATH']}", **extra}

    def run(self, tool: str, *args: str, input: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([tool, *args], env=self.env(**env), capture_output=True, text=True, input=input,
                              timeout=120)

    def call(self, tool: str, *args: str) -> ToolResult:
        return self.broker.call(tool, list(args))

    def pod(self, component: str) -> str:
        return self.cluster.pod_name(component)


def role(*rules: dict, kind: str = "Role", name: str = "r", namespace: str = "arenac") -> list[dict]:
    meta = {"name": name, **({"namespace": namespace} if kind == "Role" else {})}
    binding_kind = "RoleBinding" if kind == "Role" else "ClusterRoleBinding"
    binding_meta = {"name": name, **({"namespace": namespace} if binding_kind == "RoleBinding" else {})}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": list(rules)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind, "metadata": binding_meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": "arenac-agent", "namespace": "arenac"}]},
    ]


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> dict:
    out = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = names
    return out
