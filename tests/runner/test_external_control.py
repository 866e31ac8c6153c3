"""The channel between `arenac harness episode`, `status` and `finish` (external_control.py) and the
external agent's stand-in (external_agent.py): status.json written and read back, what the
healthcheck decides from it, the finish request, the collected run, and the freeze."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from arenac.broker import Broker
from arenac.broker.cluster import LocalCluster
from arenac.broker.tools import ToolBox
from arenac.lower.library import load_library
from arenac.model.harness_status import HarnessStatus
from arenac.runner.access import AgentAccess
from arenac.runner.external_agent import FREEZE_METHOD, ExternalAgent, StatusBoard
from arenac.runner.external_control import Control, ControlError, collect, handover_state
from arenac.runner.launch import check_agent
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_the_board_writes_each_phase_and_the_control_reads_it_back(tmp_path: Path) -> None:
    control = Control(tmp_path / "ctl")
    control.create()
    assert stat.S_IMODE(os.stat(control.root).st_mode) == 0o700
    board = StatusBoard(control)
    board.update("provisioning")
    assert control.read() == HarnessStatus(phase="provisioning", pid=os.getpid())
    board.update("handed_over", handed_over=True)
    board.update("graded", trial_status="scored", reward=1)
    assert control.read() == HarnessStatus(phase="graded", pid=os.getpid(), handed_over=True, trial_status="scored",
                                           reward=1)
    assert control.read().has_result
    assert not [p.name for p in control.root.iterdir() if p.name != "status.json"]  # no temporary file left


def test_no_status_or_one_not_ours_is_a_control_error(tmp_path: Path) -> None:
    control = Control(tmp_path)
    with pytest.raises(ControlError, match="no episode has started there"):
        control.read()
    control.status_path.write_text('{"phase": "sleeping"}')
    with pytest.raises(ControlError, match="not the status of an `arenac harness episode`"):
        control.read()


@pytest.mark.parametrize(("status", "state"), [
    (HarnessStatus(phase="handed_over", pid=os.getpid(), handed_over=True), "handed_over"),
    (HarnessStatus(phase="graded", pid=os.getpid(), handed_over=True, trial_status="scored", reward=0), "handed_over"),
    (HarnessStatus(phase="provisioning", pid=os.getpid()), "not_yet"),
    (HarnessStatus(phase="graded", pid=os.getpid(), trial_status="void", reward=0, reason="no show"), "never"),
    (HarnessStatus(phase="ended", pid=os.getpid(), reason="BundleRefused"), "never"),
])
def test_the_healthcheck_decides_from_the_status(status: HarnessStatus, state: str) -> None:
    assert handover_state(status) == state


def test_a_provisioning_episode_whose_process_is_gone_never_hands_over() -> None:
    assert handover_state(HarnessStatus(phase="provisioning", pid=_dead_pid())) == "never"


def test_the_finish_request_is_idempotent(tmp_path: Path) -> None:
    control = Control(tmp_path)
    assert not control.finish_requested()
    control.request_finish()
    control.request_finish()
    assert control.finish_requested()


def test_collect_copies_the_run_readable_by_others(tmp_path: Path) -> None:
    control = Control(tmp_path / "ctl")
    run = control.run_dir
    (run / "evidence" / "snapshots").mkdir(parents=True)
    for name in ("verdict.json", "reward.json", "run.json", "events.jsonl", "timeline-not-copied.txt"):
        (run / name).write_text(name)
    (run / "evidence" / "snapshots" / "baseline.json").write_text("{}")
    os.chmod(run / "evidence", 0o700)
    os.chmod(run / "verdict.json", 0o600)
    out = tmp_path / "out"
    collect(control, out)
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "evidence", "reward.json", "run.json",
                                                    "verdict.json"]  # no actions.jsonl: the run has none
    assert (out / "verdict.json").read_text() == "verdict.json"
    assert stat.S_IMODE(os.stat(out / "verdict.json").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(out / "evidence").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(out / "evidence" / "snapshots" / "baseline.json").st_mode) == 0o644
    collect(control, out)  # again: replaced, not refused


def test_the_external_agent_runs_until_finish_and_its_freeze_closes_the_broker(tmp_path: Path) -> None:
    surface = load_library().substrates["spine"].access["confined"]
    toolbox = ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, [])
    broker = Broker(toolbox, tools=("time-left",))
    broker.start(parent=tmp_path)
    control = Control(tmp_path / "ctl")
    control.create()
    frozen: list[int] = []
    agent = ExternalAgent(AgentAccess(broker, tmp_path / "tools"), control.finish_requested,
                          on_frozen=lambda: frozen.append(1))
    try:
        assert agent.running() and agent.exit_code is None
        control.request_finish()
        assert not agent.running()
        record = agent.freeze()
        assert (record.method, record.processes_stopped, record.remaining) == (FREEZE_METHOD, 0, ())
        assert broker.closed and frozen == [1]
        agent.freeze()
        assert frozen == [1]  # once
    finally:
        broker.stop()


def test_arenac_run_refuses_the_external_agent_and_still_knows_the_others() -> None:
    assert check_agent("external") == ("the external agent runs only under `arenac harness episode` (its broker "
                                       "listens on TCP)")
    assert check_agent("noop") is None
