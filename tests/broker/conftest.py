"""Fixtures for the broker tests: a real spine stack per module, and episodes (a broker over it).

`episode(surface_or_profile, rbac=None, tools=TOOLS)` starts a broker for one access surface (a
library profile name or an AccessSurface) with the RBAC objects `arenac.render.rbac.rbac_objects`
renders from it (or the given ones), installs the client tools in a tmp directory and collects
every action record and declaration. `Episode.run` goes through the installed executables and
the Unix socket, as an agent would; `Episode.call` calls the broker in-process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arenac.broker import TOOLS, Broker, ToolResult, open_broker
from arenac.broker.cluster import LocalCluster
from arenac.lower.library import load_library
from arenac.model.access import AccessSurface
from arenac.render.rbac import rbac_objects
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


@pytest.fixture(scope="module")
def stack() -> Iterator[SpineStack]:
    stack = start_stack()
    try:
        yield stack
    finally:
        stop_stack(stack)


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


@pytest.fixture
def episode(stack: SpineStack, tmp_path: Path) -> Iterator[Callable[..., Episode]]:
    started: list[Broker] = []

    def make(surface: str | AccessSurface, rbac: Sequence[dict[str, Any]] | None = None,
             tools: Sequence[str] = TOOLS, on_stack: SpineStack | None = None, time_scale: float = 1.0) -> Episode:
        surface = profile(surface) if isinstance(surface, str) else surface
        objects = list(rbac) if rbac is not None else rbac_objects(surface, "broker-test", "broker-test-00000000")
        holder: dict[str, Episode] = {}
        broker = open_broker(on_stack or stack, surface, objects, tools=tools, time_scale=time_scale,
                             on_action=lambda record: holder["e"].actions.append(record),
                             on_declare=lambda: holder["e"].declared.append(1.0))
        started.append(broker)
        broker.start()
        tools_dir = tmp_path / f"tools-{len(started)}"
        broker.install_tools(tools_dir, scaled_sleep=True)
        holder["e"] = Episode(broker, tools_dir)
        return holder["e"]

    yield make
    for broker in started:
        socket_dir = Path(broker.address.removeprefix("unix:")).parent
        broker.stop()
        assert not socket_dir.exists()
