"""`time-left`, the agent's clock, through the installed client: elapsed and remaining window in plan
seconds, never below zero or past the window, the soak rule; refused outside an episode; logged."""

from __future__ import annotations

import subprocess
from pathlib import Path

from arenac.broker import ActionLog, Broker
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import AgentClock, ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


class PlanClock:
    """A plan clock the test sets."""

    def __init__(self, now: float) -> None:
        self.t = now

    def __call__(self) -> float:
        return self.t


def _time_left(tmp_path: Path, clock: AgentClock | None, *argv: str) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    surface = load_library().substrates["spine"].access["confined"]
    toolbox = ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, [], agent_clock=clock)
    broker = Broker(toolbox, tools=("time-left",), on_action=ActionLog(tmp_path / "actions.jsonl"))
    broker.start(parent=tmp_path)
    try:
        (tool,) = broker.install_tools(tmp_path / "tools")
        return subprocess.run([str(tool), *argv], capture_output=True, text=True, timeout=30)
    finally:
        broker.stop()


def test_it_tells_what_is_gone_and_left_and_the_soak_rule(tmp_path: Path) -> None:
    now = PlanClock(130.0)
    done = _time_left(tmp_path, AgentClock(now, opened_s=100.0, window_s=300.0, soak_s=120.0))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("elapsed 30 s of your 300 s window; 270 s left (plan seconds")
    assert "the 120 s soak (traffic, no agent) follows either way: declaring early never shortens it" in done.stdout
    assert '"tool": "time-left"' in (tmp_path / "actions.jsonl").read_text()


def test_past_the_window_it_says_nothing_is_left(tmp_path: Path) -> None:
    done = _time_left(tmp_path, AgentClock(PlanClock(999.0), opened_s=100.0, window_s=300.0, soak_s=120.0))
    assert done.stdout.startswith("elapsed 300 s of your 300 s window; 0 s left")


def test_outside_an_episode_or_with_arguments_it_refuses(tmp_path: Path) -> None:
    outside = _time_left(tmp_path / "a", None)
    assert outside.returncode == 1 and "there is no agent window" in outside.stderr
    clock = AgentClock(PlanClock(0.0), opened_s=0.0, window_s=300.0, soak_s=120.0)
    with_args = _time_left(tmp_path / "b", clock, "--all")
    assert with_args.returncode == 1 and "usage: time-left" in with_args.stderr
