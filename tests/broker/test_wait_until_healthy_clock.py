"""`wait-until-healthy` tells how long it waited on the agent's one clock, plan seconds (as `sleep`,
`time-left` and its own --timeout count), not the compressed wall time of a scaled episode."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenac.broker import tools as tools_module
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


class FakeTime:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("time_scale", "said"), [(0.1, "healthy after 5.0 s"), (1.0, "healthy after 0.5 s")])
def test_the_wait_is_told_in_plan_seconds(tmp_path: Path, monkeypatch, time_scale: float, said: str) -> None:
    surface = load_library().substrates["spine"].access["confined"]
    toolbox = ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, [], time_scale=time_scale)
    monkeypatch.setattr(tools_module, "time", FakeTime())
    answers = iter(["pool not ready", "pool not ready", ""])  # ready at the third probe: 0.5 s of wall
    monkeypatch.setattr(toolbox, "health", lambda: next(answers))
    result = toolbox.wait_until_healthy([])
    assert result.code == 0 and result.stdout == said + "\n"
