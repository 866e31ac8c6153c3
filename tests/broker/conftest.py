"""Fixtures for the broker tests: a real spine stack per module, and episodes (a broker over it);
what they share with the tests (Episode, the stack's start and stop, ...) is in brokered.py.

`episode(surface_or_profile, rbac=None, tools=TOOLS)` starts a broker for one access surface (a
library profile name or an AccessSurface) with the RBAC objects `arenac.render.rbac.rbac_objects`
renders from it (or the given ones), installs the client tools in a tmp directory and collects
every action record and declaration. `Episode.run` goes through the installed executables and
the Unix socket, as an agent would; `Episode.call` calls the broker in-process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from arenac.broker import TOOLS, Broker, open_broker
from arenac.model.access import AccessSurface
from arenac.render.rbac import rbac_objects
from arenac.substrate.spine.stack import SpineStack
from broker.brokered import Episode, profile, start_stack, stop_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[SpineStack]:
    stack = start_stack()
    try:
        yield stack
    finally:
        stop_stack(stack)


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
