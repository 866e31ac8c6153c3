"""Fixtures for the spine substrate tests: stacks that stop themselves.

Every stack is started in a pytest tmp directory and stopped by the fixture that made it, even when
the test fails, and then checked: its PIDs dead, its ports closed. Live tests use TIME_SCALE and
small loads so that the whole directory runs in well under three minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from substrate.spine_client import Spine, assert_gone, ports_of


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[Callable[..., Spine]]:
    """Start stacks for one test (`make_stack(spec)`); all of them are stopped and checked after it."""
    started: list[SpineStack] = []

    def make(spec: SpineSpec | None = None, name: str = "stack") -> Spine:
        stack = SpineStack(tmp_path / name, spec or SpineSpec())
        started.append(stack)
        stack.start()
        return Spine(stack)

    yield make
    for stack in started:
        endpoints = stack.endpoints
        pids = [child_pid for child_pid in stack.pids().values()]
        stack.stop()
        if endpoints is not None:
            assert_gone(pids, ports_of(endpoints))


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spine]:
    """One healthy stack shared by a module; tests undo their run-time changes (`/admin/reload`).
    Its maintenance window is scheduled half an hour away: at TIME_SCALE 1 it writes as fast as the
    database takes for 6 real seconds a minute, which loaded the machine under the module's timing
    tests and under a test's own stack beside it (seen in CI: a 189 ms send outside the windows of
    test_maintenance_window_gives_periodic_send_stalls)."""
    away = round((time.time() + 1800) % 3600)
    spec = SpineSpec().with_sets(["MAINT_PERIOD_S=3600", f"MAINT_OFFSET_S={away}"])
    stack = SpineStack(tmp_path_factory.mktemp("healthy"), spec)
    stack.start()
    try:
        yield Spine(stack)
    finally:
        stack.stop()
