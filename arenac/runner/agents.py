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
    name: str  # oracle | noop | cmd
    command: str

    @classmethod
    def parse(cls, text: str, solve_script: Path) -> "AgentSpec":
        if text == "oracle":
            return cls("oracle", f"sh {shlex.quote(str(solve_script))}")
        if text == "noop":
            return cls("noop", "sleep 1; declare_repair_complete")
        if text.startswith("cmd:"):
            return cls("cmd", text[4:])
        raise ValueError(f"unknown agent {text!r}: use oracle, noop or cmd:\"...\"")


def agent_account() -> tuple[int, int] | None:
    """(uid, gid) of the unprivileged agent user when running as root, else None."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(AGENT_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            return None
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", AGENT_USER],
                       check=False, capture_output=True)
        try:
            entry = pwd.getpwnam(AGENT_USER)
        except KeyError:
            return None
    return entry.pw_uid, entry.pw_gid


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
                log: Path) -> AgentProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(instruction, workdir / "instruction.md")
    account = agent_account()
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
