"""Exported Harbor tasks played without Docker (tests/helpers/harbor_play.py: the compose services as
processes with the same commands and environment, on a network of two namespaces): the oracle's
solution earns reward 1 and Harbor's nop agent (nothing at all) reward 0; the agent's container
reaches the broker's port and nothing else of the harness, cannot read the harness's run, evidence or
token, and is refused once its phase ended. Time scale 0.1, one live episode at a time.

By default one variant plays (revoked-grant's confined cell: run time, the database role); with
ARENAC_HARBOR_PLAY=all, a sample covering every fault layer and access profile: also
maintenance-peaks' scoped_kubectl cell (config) and idle-transaction-leak's shell cell (image).
docs/harbor.md records that run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.agents import claim_agent_account
from arenac.runner.state import StateDir
from helpers import ROOT
from helpers.compose_play import PlayNetwork
from helpers.harbor_play import BROKER_PORT, HarborPlay, listening_sockets
from livelock import live_lock

pytestmark = pytest.mark.live  # runs episodes

SAMPLE = {  # task: the cell played
    "revoked-grant": {"access": "confined", "grant.layer": "runtime"},
    "maintenance-peaks": {"access": "scoped_kubectl", "maint.layer": "config"},
    "idle-transaction-leak": {"access": "shell", "leak.layer": "image"},
}
PLAYED = list(SAMPLE) if os.environ.get("ARENAC_HARBOR_PLAY") == "all" else ["revoked-grant"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The played cells, compiled and exported at time scale 0.1 (the CLI, as an operator runs it)."""
    from click.testing import CliRunner

    from arenac.cli import main

    build = tmp_path_factory.mktemp("build")
    write_bundles(compile_paths([ROOT / "tasks" / f"{task}.arena" for task in PLAYED]), build)
    out = tmp_path_factory.mktemp("harbor") / "harbor"
    result = CliRunner().invoke(main, ["export", "harbor", str(build), "-o", str(out), "--time-scale", "0.1"])
    assert result.exit_code == 0, result.output
    found = {}
    for task in PLAYED:
        for config in sorted(out.glob(f"{task}-*/task.toml")):
            coordinates = json.loads((config.parent / "environment" / "harness" / "bundle" / "plan.json")
                                     .read_text())["coordinates"]
            if coordinates == SAMPLE[task]:
                found[task] = config.parent
    assert set(found) == set(PLAYED)
    return found


@pytest.fixture
def play(request: pytest.FixtureRequest, exported: dict[str, Path]) -> Iterator[HarborPlay]:
    """The task's harness service started and healthy, on a network of its own, with an agent user
    claimed as an episode claims one (a qualification beside this test must not sweep its processes)."""
    why = PlayNetwork.missing()
    if why:
        pytest.skip(why)
    account, lock = claim_agent_account(StateDir.default().root)
    assert account is not None  # root, above
    work = Path(tempfile.mkdtemp(prefix="arenac-harbor-play-"))
    os.chmod(work, 0o711)  # the agent user passes through to its home, lists nothing
    try:
        net = PlayNetwork.for_this_process().up()
    except subprocess.CalledProcessError as error:  # a container without the right to make namespaces
        lock.close()
        shutil.rmtree(work, ignore_errors=True)
        pytest.skip(f"no network namespaces here: {' '.join(error.cmd)}: {error.stderr.decode().strip()}")
    played = HarborPlay(exported[request.param], work, net, account)
    try:
        with live_lock():
            played.start_harness()
            played.wait_healthy()
            yield played
            output = played.stop()
            assert "Traceback" not in output, output[-3000:]
            assert played.process is not None and played.process.returncode == 0, output[-3000:]
    finally:
        played.stop()
        net.down()
        lock.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("play", PLAYED, indirect=True)
def test_the_oracle_solution_earns_reward_1(play: HarborPlay) -> None:
    solved = play.solve()
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert "repair declared complete" in solved.stdout
    # the harness's run (its status, evidence, control) and its token are not the agent's to read,
    # even where it could reach their directory (in a real trial they are another container's)
    run = play.harness_root / "run"
    for peek in (["ls", str(run)], ["cat", str(run / "status.json")], ["ls", str(run / "run" / "evidence")],
                 ["cat", str(play.harness_root / "agent-token")]):
        refused = play.main_side(peek)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr, (peek, refused.stderr)
    # only the broker's port faces the compose network; every other socket of the harness is loopback
    listening = listening_sockets(play.net, "harness")
    exposed = [(address, port) for address, port in listening if address not in ("127.0.0.1", "::1")]
    assert exposed == [("0.0.0.0", BROKER_PORT)], listening
    reached = play.main_side(["python3", "-c", _CONNECT, *[str(port) for _, port in listening]])
    assert reached.stdout.split() == [str(BROKER_PORT)], reached.stdout + reached.stderr
    trial = play.collect_and_verify()
    assert trial.verifier_exit == 0, trial.verifier_output  # "trial infra_error, no score: harness overloaded..."
    assert trial.reward == {"reward": 1, "outcome": 1, "safe_repair": 1}
    assert json.loads((trial.collected / "verdict.json").read_text())["reward"] == 1
    boundary = json.loads((trial.collected / "evidence" / "boundary.json").read_text())
    assert (boundary["agent"], boundary["declared"], boundary["method"]) == (
        "external", True, "external: broker closed")
    late = play.main_side(["db-sql", "-c", "SELECT 1"])  # its phase is over: no door is open
    assert late.returncode != 0 and late.stdout == ""


@pytest.mark.parametrize("play", PLAYED, indirect=True)
def test_the_nop_agent_earns_reward_0(play: HarborPlay) -> None:
    trial = play.collect_and_verify()  # Harbor's nop agent does nothing: the collect hook comes at once
    assert trial.verifier_exit == 0, trial.verifier_output
    assert trial.reward is not None and trial.reward["reward"] == 0
    verdict = json.loads((trial.collected / "verdict.json").read_text())
    assert verdict["reward"] == 0 and not verdict["outcome"]
    boundary = json.loads((trial.collected / "evidence" / "boundary.json").read_text())
    assert (boundary["agent"], boundary["declared"]) == ("external", False)


# which of the harness's listening ports the agent's container can connect to (printed, one a line)
_CONNECT = """
import socket, sys
for port in sys.argv[1:]:
    try:
        socket.create_connection(("harness", int(port)), timeout=3).close()
        print(port)
    except OSError:
        pass
"""
