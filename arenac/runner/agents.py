"""Agents: the built-in `oracle` and `noop`, and any external command (`cmd:"..."`).

An agent gets a fresh working directory holding only `instruction.md`, a PATH of the brokered
tools (and the system's basic commands), and nothing else: no evidence, gates, plan or answer
key. When the runner is root it runs as a separate, unprivileged user of its own, so it cannot
read the run directory or signal the harness. With a sandbox (sandbox.py: the default wherever
bubblewrap works) it sees only its working directory, its tools and the system's read-only
directories, in PID, IPC and network namespaces of its own, and `freeze` ends the whole namespace
in one step, then proves that no process of it remains. Without one, the agent runs in its own
process group and `freeze` kills the group and sweeps its user's processes until none is left.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import select
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from arenac.runner import adversaries
from arenac.sandbox import (
    AGENT_HOME,
    AGENT_PATH,
    SandboxChoice,
    SandboxLayout,
    encode_args,
    mount_args,
    namespace_members,
    pid_namespace,
)
from arenac.sandbox import command as sandbox_command

AGENT_USER = "arenac-agent"
EXTERNAL = "external"  # the agent of `arenac harness episode`: another container's, never started here
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class AgentSpec:
    name: str  # oracle | noop | cmd | adversary:NAME | external
    command: str
    files: tuple[Path, ...] = ()  # copied into the working directory before the command starts

    @classmethod
    def parse(cls, text: str, solve_script: Path) -> AgentSpec:
        if text == "oracle":
            return cls("oracle", f"sh {shlex.quote(str(solve_script))}")
        if text == "noop":
            return cls("noop", "sleep 1; declare_repair_complete")
        if text.startswith("cmd:"):
            return cls("cmd", text[4:])
        if text == EXTERNAL:  # no process of the harness's: it acts through the broker only (external_agent.py)
            return cls(EXTERNAL, "")
        if text.startswith("adversary:"):  # the built-in adversarial suite (raises naming the strategies)
            command, files = adversaries.resolve(text[len("adversary:"):], solve_script)
            return cls(text, command, files)
        raise ValueError(f"unknown agent {text!r}: use oracle, noop, adversary:NAME or cmd:\"...\"")


_USER_SLOTS = 16  # episodes side by side, each with an agent user of its own


def agent_account(name: str = AGENT_USER) -> tuple[int, int] | None:
    """(uid, gid) of an unprivileged agent user when running as root (created on first use), else None."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            return None
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=False, capture_output=True)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            return None
    return entry.pw_uid, entry.pw_gid


def claim_agent_account(lock_dir: Path):
    """An agent user no other live episode holds, with the lock that holds it (keep it open for
    the episode's lifetime). Freezing sweeps every process of the user, so two episodes must
    never share one. Returns (account or None, lock file or None)."""
    if os.geteuid() != 0:
        return None, None
    lock_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(_USER_SLOTS):
        handle = open(lock_dir / f"agent-user-{slot}.lock", "w")  # noqa: SIM115 - held: the lock lives with the episode
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return agent_account(AGENT_USER if slot == 0 else f"{AGENT_USER}{slot}"), handle
    raise RuntimeError(f"more than {_USER_SLOTS} episodes at once: no free agent user")


@dataclass(frozen=True)
class AgentLaunch:
    """Where and how one agent runs: its working directory (holding only `instruction.md`, and the
    oracle's script for the oracle: both as pinned when the bundle was opened), its tools and the
    broker's socket directory, its log, its user (None: the runner's own), and its sandbox."""

    workdir: Path
    tools_dir: Path
    broker_dir: Path
    instruction: bytes
    oracle_script: bytes
    log: Path
    account: tuple[int, int] | None
    sandbox: SandboxChoice
    extra_env: dict[str, str] = field(default_factory=dict)
    extra_ro: tuple[Path, ...] = ()
    network: str = "private"


@dataclass(frozen=True)
class FreezeRecord:
    """What the freeze did: how, how many processes it ended, and any that it could not."""

    method: str  # pid-namespace | killpg | external: ...
    processes_stopped: int
    remaining: tuple[int, ...]


@dataclass
class AgentProcess:
    process: subprocess.Popen
    account: tuple[int, int] | None
    started: float
    sandbox: str = "none"
    namespace: str | None = None  # the sandbox's PID namespace (/proc/PID/ns/pid)
    init_pid: int | None = None  # the namespace's init, as the host sees it

    def running(self) -> bool:
        return self.process.poll() is None

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode

    def freeze(self) -> FreezeRecord:
        """End every process of the agent, in one step when it is sandboxed; prove none remain."""
        if self.namespace is not None:
            return self._freeze_namespace(self.namespace)
        return self._freeze_group()

    def _freeze_namespace(self, namespace: str) -> FreezeRecord:
        members = namespace_members(namespace)
        # the namespace's init dies with the outer bwrap (--die-with-parent), and with the init the
        # kernel kills every process of the namespace: detaching (setsid, double fork) cannot escape
        for pid in (self.process.pid, self.init_pid):
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        remaining = members
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            remaining = namespace_members(namespace)
            if not remaining:
                break
            time.sleep(0.02)
        self._sweep_user()  # nothing outside the namespace may run as the agent's user either
        _reap(self.process)
        return FreezeRecord("pid-namespace", len(members), tuple(remaining))

    def _freeze_group(self) -> FreezeRecord:
        stopped = 0
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
            stopped += 1
        except ProcessLookupError:
            pass
        # processes that left the group (setsid) still carry the uid; one that forks while a pass
        # runs is caught by the next, so sweep until a pass finds nothing (bounded)
        for _ in range(50):
            found = self._sweep_user()
            stopped += found
            if not found:
                break
        _reap(self.process)
        return FreezeRecord("killpg", stopped, tuple(self._user_pids()))

    def _user_pids(self) -> list[int]:
        if self.account is None:
            return []
        pids = []
        for proc in psutil.process_iter(["uids", "status"]):
            uids = proc.info.get("uids")
            if uids and self.account[0] in (uids.real, uids.effective) and proc.info.get("status") != "zombie":
                pids.append(proc.pid)
        return pids

    def _sweep_user(self) -> int:
        killed = 0
        for pid in self._user_pids():
            try:
                psutil.Process(pid).kill()
                killed += 1
            except psutil.Error:
                pass
        return killed


def _reap(process: subprocess.Popen) -> None:
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def prepare_workdir(spec: AgentSpec, launch: AgentLaunch) -> AgentSpec:
    """A fresh working directory with `instruction.md` (and the oracle's private copy of its script);
    returns the spec with the command as it runs there."""
    workdir = launch.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "instruction.md").write_bytes(launch.instruction)
    for source in spec.files:  # an adversary's script and helper; the answer key as pinned
        (workdir / source.name).write_bytes(launch.oracle_script if source.name == "solve.sh" else source.read_bytes())
    if spec.name == "oracle":  # the oracle runs a private copy of its (pinned) script
        (workdir / "solve.sh").write_bytes(launch.oracle_script)
        spec = AgentSpec("oracle", "sh ./solve.sh")
    if launch.account is not None:
        os.chown(workdir, *launch.account)
        for path in workdir.iterdir():
            os.chown(path, *launch.account)
    return spec


def start_agent(spec: AgentSpec, launch: AgentLaunch) -> AgentProcess:
    spec = prepare_workdir(spec, launch)
    kwargs: dict = {}
    if launch.account is not None:
        kwargs = {"user": launch.account[0], "group": launch.account[1], "extra_groups": []}
    if launch.sandbox.mechanism == "bwrap":
        return _start_sandboxed(spec, launch, kwargs)
    workdir = launch.workdir
    env = {"PATH": f"{launch.tools_dir}:{_SYSTEM_PATH}", "HOME": str(workdir), "LANG": "C.UTF-8",
           "ARENAC_INSTRUCTION": str(workdir / "instruction.md"), **launch.extra_env}
    with open(launch.log, "ab") as out:  # the agent's copy of the descriptor outlives ours
        process = subprocess.Popen(["/bin/sh", "-c", spec.command], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
    return AgentProcess(process, launch.account, time.monotonic())


def _start_sandboxed(spec: AgentSpec, launch: AgentLaunch, kwargs: dict) -> AgentProcess:
    env = {"PATH": AGENT_PATH, "HOME": AGENT_HOME, "LANG": "C.UTF-8", "TMPDIR": "/tmp", "USER": "agent",
           "ARENAC_INSTRUCTION": f"{AGENT_HOME}/instruction.md", **launch.extra_env}
    layout = SandboxLayout(workdir=launch.workdir, tools=launch.tools_dir, broker_dir=launch.broker_dir,
                           extra_ro=launch.extra_ro, network=launch.network, env=env)
    args_read, args_write = os.pipe()
    info_read, info_write = os.pipe()
    out = open(launch.log, "ab")  # noqa: SIM115 - closed below with the pipes' ends, once the sandbox has them
    try:
        os.write(args_write, encode_args(mount_args(layout)))
        os.close(args_write)
        process = subprocess.Popen(sandbox_command(["/bin/sh", "-c", spec.command], args_read, info_write),
                                   cwd="/", env={"PATH": _SYSTEM_PATH, "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   pass_fds=(args_read, info_write), **kwargs)
    finally:
        out.close()
        os.close(args_read)
        os.close(info_write)
    init_pid = _read_init_pid(info_read, process)
    namespace = pid_namespace(init_pid) if init_pid else None
    if namespace is None and process.poll() is None:
        process.kill()
        _reap(process)
        raise RuntimeError("the agent's sandbox did not start (bwrap reported no namespace)")
    return AgentProcess(process, launch.account, time.monotonic(), "bwrap", namespace, init_pid)


def _read_init_pid(fd: int, process: subprocess.Popen, timeout: float = 20.0) -> int | None:
    """bwrap writes {"child-pid": N} on its info fd once the namespace exists, then closes it."""
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data += chunk
            elif process.poll() is not None:
                break
    finally:
        os.close(fd)
    try:
        return int(json.loads(data.decode() or "{}").get("child-pid") or 0) or None
    except ValueError:
        return None
