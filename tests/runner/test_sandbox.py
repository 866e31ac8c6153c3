"""The agent's sandbox, on real processes (bubblewrap; no substrate needed): what an attacking
agent can see, reach and outlive, and that the agent's own program still runs.

Each attack is also run without the sandbox, where it succeeds: the assertions can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arenac import sandbox as sandbox_module
from arenac.runner.agents import AgentLaunch, AgentSpec, claim_agent_account, start_agent
from arenac.sandbox import SandboxChoice, SandboxUnavailable, namespace_members, probe

CHECKOUT = Path(__file__).resolve().parents[2]
HAVE_BWRAP = probe("auto").mechanism == "bwrap"
needs_bwrap = pytest.mark.skipif(
    not HAVE_BWRAP and not os.environ.get("ARENAC_REQUIRE_SANDBOX"),
    reason="bubblewrap is not usable here (CI installs it and sets ARENAC_REQUIRE_SANDBOX)")

SNOOP = r'''
import json, os, socket, sys
checkout, port, marker, bound = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def can_read(path):
    try:
        open(path, "rb").read(1); return True
    except OSError:
        return False
def connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); return True
    except OSError:
        return False
def can_write(directory):
    try:
        open(os.path.join(directory, "x"), "w").write("x"); return True
    except OSError:
        return False
cmdlines = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            cmdlines.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode())
        except OSError:
            pass
report = {"checkout_readme": can_read(os.path.join(checkout, "README.md")),
          "spec": can_read(os.path.join(checkout, "tasks", "revoked-grant.arena")),
          "port": connects(port), "host_tmp_marker": os.path.exists(marker),
          "processes": len(cmdlines), "cmdlines": cmdlines,
          "home_writable": can_write(os.environ["HOME"]),
          "bound_readable": can_read(os.path.join(bound, "tool.txt")), "bound_writable": can_write(bound),
          # empty but for the bound directory's own mount point
          "tmp_empty": os.listdir("/tmp") in ([], [bound.split("/")[2]])}
open("report.json", "w").write(json.dumps(report))
'''

ESCAPE = r'''
# detach in every way a process can: a new session, a double fork, a nohup'd loop
setsid sh -c 'while :; do date +%s%N >> beat-a; sleep 0.1; done' </dev/null >/dev/null 2>&1 &
( setsid sh -c 'while :; do date +%s%N >> beat-b; sleep 0.1; done' </dev/null >/dev/null 2>&1 & ) &
nohup sh -c 'while :; do date +%s%N >> beat-c; sleep 0.1; done' </dev/null >/dev/null 2>&1 &
exec sleep 600
'''


@pytest.fixture
def tmp_path():
    """A directory the agent's user can reach (pytest's own is private to root), as the episode's
    scratch directory is."""
    path = Path(tempfile.mkdtemp(prefix="arenac-sandbox-test-"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def launch_for(tmp_path):
    accounts = []

    def make(mechanism: str, extra_ro: tuple[Path, ...] = ()) -> AgentLaunch:
        (tmp_path / "tools").mkdir(exist_ok=True)
        (tmp_path / "broker").mkdir(exist_ok=True)
        account, lock = claim_agent_account(tmp_path / "locks")
        accounts.append(lock)
        return AgentLaunch(workdir=tmp_path / f"work-{mechanism}", tools_dir=tmp_path / "tools",
                           broker_dir=tmp_path / "broker", instruction=b"fix it\n", oracle_script=b"",
                           log=tmp_path / f"agent-{mechanism}.log", account=account,
                           sandbox=SandboxChoice(mechanism, ""), extra_ro=extra_ro)

    yield make
    for lock in accounts:
        if lock is not None:
            lock.close()


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def _snoop(launch_for, tmp_path, listener, mechanism: str) -> dict:
    marker = Path("/tmp") / f"arenac-host-marker-{os.getpid()}"
    marker.write_text("host")
    bound = tmp_path / "agent-program"
    bound.mkdir(exist_ok=True)
    (bound / "tool.txt").write_text("the agent's own program")
    os.chmod(bound, 0o755)
    os.chmod(bound / "tool.txt", 0o644)
    script = bound / "snoop.py"
    script.write_text(SNOOP)
    os.chmod(script, 0o644)
    launch = launch_for(mechanism, extra_ro=(bound,))
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    agent = start_agent(AgentSpec("cmd", f"{python} {script} {CHECKOUT} {listener} {marker} {bound}"), launch)
    try:
        agent.process.wait(timeout=60)
    finally:
        agent.freeze()
        marker.unlink()
    return json.loads((launch.workdir / "report.json").read_text())


@needs_bwrap
def test_a_sandboxed_agent_sees_nothing_of_the_harness_and_its_own_program_runs(launch_for, tmp_path, listener):
    report = _snoop(launch_for, tmp_path, listener, "bwrap")
    assert report["checkout_readme"] is False and report["spec"] is False  # no checkout, no specs
    assert report["port"] is False  # no loopback port of the host
    assert report["host_tmp_marker"] is False and report["tmp_empty"]  # a fresh /tmp of its own
    assert report["processes"] <= 4, report["cmdlines"]  # bwrap's init, sh, python: nothing of the harness
    assert not any("pytest" in line for line in report["cmdlines"])  # the harness is not in its /proc
    assert report["home_writable"] and report["bound_readable"]  # its own program still runs
    assert report["bound_writable"] is False  # the operator's directory is read-only


def test_without_the_sandbox_the_same_agent_sees_the_host(launch_for, tmp_path, listener):
    report = _snoop(launch_for, tmp_path, listener, "none")
    assert report["spec"] is True and report["port"] is True and report["host_tmp_marker"] is True


def _beats(workdir: Path) -> dict[str, int]:
    return {name: (workdir / name).stat().st_size if (workdir / name).exists() else 0
            for name in ("beat-a", "beat-b", "beat-c")}


@needs_bwrap
def test_the_freeze_ends_every_detached_process_in_one_step(launch_for, tmp_path):
    launch = launch_for("bwrap")
    agent = start_agent(AgentSpec("cmd", ESCAPE), launch)
    deadline = time.monotonic() + 20
    while not all(_beats(launch.workdir).values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_beats(launch.workdir).values()), "the escapers never started"
    assert len(namespace_members(agent.namespace)) >= 5
    record = agent.freeze()
    assert record.method == "pid-namespace" and record.remaining == ()
    assert record.processes_stopped >= 5
    frozen = _beats(launch.workdir)
    time.sleep(0.5)
    assert _beats(launch.workdir) == frozen, "a detached process kept running after the freeze"
    assert namespace_members(agent.namespace) == []


def test_bwrap_asked_for_by_name_is_refused_where_it_cannot_run(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox_module, "_PROBED", {})
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        probe("bwrap")
    choice = probe("auto")
    assert choice.mechanism == "none" and "bubblewrap is not installed" in choice.reason
    assert probe("none").mechanism == "none"
