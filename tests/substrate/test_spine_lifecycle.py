"""`arenac substrate up` stopped at any point of its start-up, and the ownership of a stack directory.

Each test runs the real CLI in a subprocess and checks the machine afterwards: no process it
started survives (found by the stack directory on their command lines, so an orphan adopted by
init counts too) and no port it used still listens. Every wait is bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from arenac.substrate.spine.stack import Endpoints
from substrate.spine_client import Spine, assert_gone, ports_of, stop_command

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

ARENAC = [sys.executable, "-m", "arenac.cli", "substrate"]


def processes_of(directory: Path) -> list[psutil.Process]:
    """Every live process whose command line names `directory` (servers, services, the CLI)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and str(directory) in " ".join(proc.info["cmdline"] or ()):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def listening_ports(procs: list[psutil.Process]) -> set[int]:
    ports = set()
    for proc in procs:
        try:
            for family in ("tcp4", "tcp6"):
                ports |= {c.laddr.port for c in proc.net_connections(family) if c.status == psutil.CONN_LISTEN}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return ports


def wait_for(check: Callable[[], bool], timeout: float, what: str, up: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if up is not None and up.poll() is not None:
            raise AssertionError(f"`up` exited ({up.returncode}) before {what}: {up.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def run_up() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start `arenac substrate up spine ARGS...`; any still running at the end (a failed test) is
    stopped by PID (`stop_command`)."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        up = subprocess.Popen([*ARENAC, "up", "spine", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        started.append(up)
        return up

    yield start
    for up in started:
        stop_command(up)


def _ledger_has_postgres(d: Path) -> bool:
    try:
        return "postgres" in json.loads((d / "pids.json").read_text())
    except (OSError, ValueError):
        return False


# points of the start-up at which the signal arrives: initdb running (the cluster directory
# exists, no server yet); the server spawned but not yet ready or bootstrapped (the moment the
# old stack did not know it); services spawned and the server recorded, nothing ready yet
STARTUP_POINTS = {
    "initdb": lambda d: (d / "postgres" / "data").exists(),
    "postgres-spawned": lambda d: (d / "logs" / "postgres.log").exists(),  # opened when the server is spawned
    "postgres-recorded": _ledger_has_postgres,
}


@pytest.mark.parametrize("point", list(STARTUP_POINTS))
def test_sigterm_during_startup_ends_everything_started(tmp_path: Path, run_up, point: str) -> None:
    d = tmp_path / "d"
    up = run_up("--dir", str(d))
    wait_for(lambda: STARTUP_POINTS[point](d), 30, point, up)
    ours = [p for p in processes_of(d) if p.pid != up.pid]
    ports = listening_ports(ours)
    up.send_signal(signal.SIGTERM)
    _, err = up.communicate(timeout=40)
    assert up.returncode == 0, err
    assert "Traceback" not in err and "SIGTERM, stopping" in err
    wait_for(lambda: not processes_of(d), 10, f"no process of {d} left")  # orphans (ppid 1) included
    assert_gone([p.pid for p in ours], sorted(ports))
    assert json.loads((d / "pids.json").read_text() if (d / "pids.json").exists() else "{}") == {}


def test_a_second_up_on_a_live_directory_is_refused_and_touches_nothing(tmp_path: Path, make_stack) -> None:
    first: Spine = make_stack(name="live")
    d = first.stack.data_dir
    ready = tmp_path / "ready.json"
    ready.write_text("the first stack's ready file\n")
    before = {name: (d / name).read_bytes() for name in ("pids.json", "endpoints.json", "secrets.json")}
    configs = {path: path.read_bytes() for path in (d / "config").iterdir()}
    pids = dict(first.stack.pids())

    second = subprocess.run([*ARENAC, "up", "spine", "--dir", str(d), "--ready-file", str(ready)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert second.returncode == 2, second.stderr
    assert "in use by a running stack" in second.stderr and "Traceback" not in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    assert ready.read_text() == "the first stack's ready file\n"
    assert {name: (d / name).read_bytes() for name in before} == before
    assert {path: path.read_bytes() for path in (d / "config").iterdir()} == configs
    assert first.stack.pids() == pids and not first.stack.exited()
    assert all(item.ready for item in first.stack.status())
    assert first.send("general", "still mine", first.login()).status == 201


def test_leftovers_of_a_crashed_stack_are_still_cleaned(tmp_path: Path, run_up) -> None:
    d = tmp_path / "d"
    first = run_up("--dir", str(d), "--ready-file", str(tmp_path / "first.json"))
    wait_for((tmp_path / "first.json").exists, 60, "the first stack ready", first)
    crashed = Endpoints.from_json((tmp_path / "first.json").read_text())
    first.kill()  # SIGKILL: no clean-up; PostgreSQL and Redis stay behind, orphaned
    first.communicate(timeout=10)
    servers = [crashed.pids["postgres"], crashed.pids["redis"]]
    assert all(psutil.pid_exists(pid) for pid in servers)

    second = run_up("--dir", str(d), "--ready-file", str(tmp_path / "second.json"))
    wait_for((tmp_path / "second.json").exists, 60, "the second stack ready", second)
    assert_gone(servers, [])  # ended by the second stack, through the crashed one's ledger
    assert Endpoints.from_json((tmp_path / "second.json").read_text()).pids["postgres"] not in servers
    second.send_signal(signal.SIGTERM)
    _, err = second.communicate(timeout=40)
    assert second.returncode == 0, err
    wait_for(lambda: not processes_of(d), 10, f"no process of {d} left")
    assert_gone([], ports_of(crashed))
