"""instruction.md names every command the agent finds on its PATH, and nothing else: for every
variant of the cohort, the tools the broker installs for the plan (arenac/runner/access.py) are
exactly those the instruction lists, and it states the soak rule through time-left."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arenac.broker import Broker
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import ToolBox
from arenac.lower.library import load_library
from arenac.model.plan import Plan
from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.access import brokered_tools
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("bundles")
    return [written.path for written in write_bundles(compile_paths(["tasks/"]), out)]


def listed(instruction: str) -> list[str]:
    """The command of each bullet under `## What you can use`."""
    section = instruction.split("## What you can use", 1)[1]
    return [usage.split()[0] for usage in re.findall(r"^- `([^`]+)`:", section, flags=re.MULTILINE)]


def on_path(plan: Plan, directory: Path) -> list[str]:
    surface = load_library().substrates["spine"].access["confined"]
    broker = Broker(ToolBox(LocalCluster(SpineStack(directory / "stack", SpineSpec())), surface, []),
                    tools=brokered_tools(plan))
    return sorted(path.name for path in broker.install_tools(directory / "tools", scaled_sleep=True,
                                                         socket_as_seen="/run/arenac/broker.sock"))


def test_every_variant_lists_exactly_what_its_path_holds(bundles: list[Path], tmp_path: Path) -> None:
    assert bundles
    for number, bundle in enumerate(bundles):
        plan = Plan.model_validate(json.loads((bundle / "plan.json").read_text()))
        instruction = (bundle / "instruction.md").read_text()
        assert sorted(listed(instruction)) == on_path(plan, tmp_path / str(number)), bundle.name
        assert "declaring early ends your time, never the soak" in instruction

