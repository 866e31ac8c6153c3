"""Every process an episode starts is bound to the episode by the kernel (runner/lifetime.py).

The unit tests use plain processes in real cgroups; the live test kills `arenac run` with SIGKILL
at every phase boundary of a real episode and checks that no process, port, cgroup, scratch
directory or state record is left once the watchdog has done its work.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from arenac.runner.fault_suite import event_names, still_running
from arenac.runner.lifetime import RunnerCgroups, base_dir, cgroup_pids, reap_dead_runners, start_ticks


def _cgroups_or_skip() -> Path:
    base = base_dir()
    usable = base is not None and os.geteuid() == 0
    if not usable:
        if os.environ.get("ARENAC_REQUIRE_CGROUP") == "1":
            pytest.fail("ARENAC_REQUIRE_CGROUP=1 but no writable cgroup v2 hierarchy")
        pytest.skip("episode cgroups need root and a cgroup v2 hierarchy")
    return base


def _gone(pids, timeout: float = 15.0) -> list[int]:
    """The PIDs still running (zombies count as gone) after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = still_running(pids)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


# A stand-in runner: opens its cgroups, starts one "episode" that daemonises a grandchild (a
# double fork in a new session, like a datastore), prints the PIDs, then sleeps until killed.
RUNNER = r"""
import os, subprocess, sys, time
from pathlib import Path
from arenac.runner.lifetime import RunnerCgroups
cgroups, why = RunnerCgroups.open(Path(sys.argv[1]))
assert cgroups is not None, why
episode = cgroups.episode("unit")
child = subprocess.Popen([sys.executable, "-c",
    "import os, sys, time\n"
    "sys.stdin.read(1)\n"  # waits until it has been adopted, as the episode worker does
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        print(os.getpid(), flush=True); time.sleep(120)\n"
    "    os._exit(0)\n"
    "time.sleep(120)\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
episode.adopt(child.pid)
child.stdin.write("go"); child.stdin.flush()
daemon = int(child.stdout.readline())
print(json.dumps({"child": child.pid, "daemon": daemon, "cgroup": str(episode.path),
                  "watchdog": cgroups.watchdog.pid}), flush=True)
time.sleep(120)
""".replace("print(json.dumps", "import json; print(json.dumps")


def test_killing_the_runner_ends_its_episodes_processes_daemons_included(tmp_path):
    _cgroups_or_skip()
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path / "state")], stdout=subprocess.PIPE,
                              text=True)
    try:
        started = json.loads(runner.stdout.readline())
        pids = [started["child"], started["daemon"]]
        assert psutil.Process(started["daemon"]).ppid() != started["child"]  # re-parented: a real daemon
        assert sorted(cgroup_pids(Path(started["cgroup"]))) == sorted(pids)
        time.sleep(0.5)
        assert set(_gone(pids, timeout=0)) == set(pids)  # while the runner lives, its episode does
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert _gone(pids) == []
        assert _gone([started["watchdog"]]) == []  # its work done, the watchdog itself ends
        assert not Path(started["cgroup"]).parent.exists()
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_the_next_runner_reaps_the_cgroup_of_a_dead_one_and_leaves_live_ones(tmp_path):
    base = _cgroups_or_skip()
    dead = base / "runner-999999-1"  # no process has PID 999999 started at tick 1
    me = base / f"runner-{os.getpid()}-{start_ticks(os.getpid())}"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead.mkdir(parents=True)
        me.mkdir(exist_ok=True)
        (dead / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        lines = reap_dead_runners()
        assert any("runner-999999-1" in line for line in lines)
        assert not any(me.name in line for line in lines)
        assert sleeper.wait(10) == -signal.SIGKILL
        assert not dead.exists() and me.exists()
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        for path in (dead, me):
            if path.exists():
                path.rmdir()


def test_open_says_why_when_no_cgroup_can_be_had(tmp_path, monkeypatch):
    monkeypatch.setattr("arenac.runner.lifetime.base_dir", lambda: None)
    monkeypatch.setattr("arenac.runner.lifetime._OPENED", None)
    cgroups, why = RunnerCgroups.open(tmp_path)
    assert cgroups is None and "cgroup v2" in why


# ---- live: SIGKILL of `arenac run` at every phase boundary ------------------------------------------

PHASES = {
    # phase: the event after which the runner is killed (None: during provisioning, before "provisioned")
    "provisioning": None,
    "warm-up": "load_started",
    "injection": "onset",
    "handover": "agent_started",
    "soak": "soak",
    "challenges": "snapshot:soak_end",
    "grading": "torn_down",
}


def _listening(pids) -> set[int]:
    ports = set()
    for pid in pids:
        try:
            ports |= {c.laddr.port for c in psutil.Process(pid).net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            pass
    return ports


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    from arenac.pipeline import compile_paths, write_bundles

    return write_bundles(compile_paths(["tasks/revoked-grant.arena"]), tmp_path_factory.mktemp("b"))[0].path


@pytest.mark.live
@pytest.mark.parametrize("phase", list(PHASES))
def test_sigkill_of_the_runner_at_every_phase_leaves_nothing(phase, small_bundle, tmp_path):
    base = _cgroups_or_skip()
    after = PHASES[phase]
    run_dir = tmp_path / "run"
    state = tmp_path / "state"
    env = dict(os.environ, ARENAC_STATE_DIR=str(state))
    scratch_before = set(Path("/tmp").glob("arenac-episode-*"))
    runner = subprocess.Popen([sys.executable, "-m", "arenac.cli", "run", str(small_bundle), "--agent",
                               "cmd:declare_repair_complete", "--time-scale", "0.1", "--out", str(run_dir)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = base / f"runner-{runner.pid}-"
    try:
        seen: set[int] = set()
        ports: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and runner.poll() is None:
            cgroups = [p for p in base.glob(f"runner-{runner.pid}-*")]
            now = set(cgroup_pids(cgroups[0])) if cgroups else set()
            seen |= now
            ports |= _listening(now)
            events = event_names(run_dir)
            if (after is None and len(now) >= 3 and "provisioned" not in events) or (after in events):
                break
            time.sleep(0.05)
        assert runner.poll() is None, f"the episode ended before {phase}"
        assert seen, "no episode process was seen"
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert _gone(seen) == [], f"left running after a kill during {phase}"

        def still_listening() -> set[int]:
            return ports & {c.laddr.port for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}

        # a killed thread group's leader shows as a zombie while its other threads still exit and
        # hold its files: what is left is waited for, bounded
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (list(base.glob(mine.name + "*")) or list(state.glob("*.json"))
                                               or set(Path("/tmp").glob("arenac-episode-*")) - scratch_before
                                               or still_listening()):
            time.sleep(0.1)
        assert not still_listening(), f"ports still open: {still_listening()}"
        assert not list(base.glob(mine.name + "*")), "the runner's cgroup is still there"
        assert not list(state.glob("*.json")), "the episode's state record is still there"
        assert not set(Path("/tmp").glob("arenac-episode-*")) - scratch_before, "a scratch directory is left"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
