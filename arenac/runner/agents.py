"""Agents: the built-in `oracle` and `noop`, and any external command (`cmd:"..."`).

An agent gets a fresh working directory holding only `instruction.md`, a PATH of the brokered
tools (and the system's basic commands), and nothing else: no evidence, gates, plan or answer
key. It runs in its own process group; when the runner is root it also runs as a separate,
unprivileged user, so it cannot read the run directory or signal the harness. `freeze` stops
the whole group (and, with a dedicated user, every process of that user).
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

AGENT_USER = "arenac-agent"
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class AgentSpec:
    name: str  # oracle | noop | cmd | adversary:NAME
    command: str
    files: tuple[Path, ...] = ()  # copied into the working directory before the command starts

    @classmethod
    def parse(cls, text: str, solve_script: Path) -> "AgentSpec":
        if text == "oracle":
            return cls("oracle", f"sh {shlex.quote(str(solve_script))}")
        if text == "noop":
            return cls("noop", "sleep 1; declare_repair_complete")
        if text.startswith("cmd:"):
            return cls("cmd", text[4:])
        if text.startswith("adversary:"):  # the built-in adversarial suite (raises naming the strategies)
            from arenac.runner import adversaries

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
    import fcntl

    if os.geteuid() != 0:
        return None, None
    lock_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(_USER_SLOTS):
        handle = open(lock_dir / f"agent-user-{slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return agent_account(AGENT_USER if slot == 0 else f"{AGENT_USER}{slot}"), handle
    raise RuntimeError(f"more than {_USER_SLOTS} episodes at once: no free agent user")


@dataclass
class AgentProcess:
    process: subprocess.Popen
    account: tuple[int, int] | None
    started: float

    def running(self) -> bool:
        return self.process.poll() is None

    def freeze(self) -> int:
        """Stop every process of the agent; returns how many were signalled."""
        import psutil

        stopped = 0
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
            stopped += 1
        except ProcessLookupError:
            pass
        if self.account is not None:  # processes that left the group (setsid) still carry the uid
            for proc in psutil.process_iter(["uids"]):
                uids = proc.info.get("uids")
                if uids and uids.real == self.account[0]:
                    try:
                        proc.kill()
                        stopped += 1
                    except psutil.Error:
                        pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        return stopped


def start_agent(spec: AgentSpec, workdir: Path, tools_dir: Path, instruction: Path, extra_env: dict[str, str],
                log: Path, account: tuple[int, int] | None) -> AgentProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(instruction, workdir / "instruction.md")
    for source in spec.files:
        shutil.copyfile(source, workdir / source.name)
    env = {"PATH": f"{tools_dir}:{_SYSTEM_PATH}", "HOME": str(workdir), "LANG": "C.UTF-8",
           "ARENAC_INSTRUCTION": str(workdir / "instruction.md"), **extra_env}
    if spec.name == "oracle":  # the oracle's script sits in the bundle; give it a private copy
        script = workdir / "solve.sh"
        source = Path(shlex.split(spec.command)[1])
        shutil.copyfile(source, script)
        spec = AgentSpec("oracle", f"sh {shlex.quote(str(script))}")
    kwargs = {}
    if account is not None:
        os.chown(workdir, *account)
        for path in workdir.iterdir():
            os.chown(path, *account)
        kwargs = {"user": account[0], "group": account[1], "extra_groups": []}
    out = open(log, "ab")
    try:
        process = subprocess.Popen(["/bin/sh", "-c", spec.command], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
    finally:
        out.close()
    return AgentProcess(process, account, time.monotonic())
