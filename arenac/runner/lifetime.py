"""Bind every process of an episode to the episode's lifetime, by the kernel.

Contract:
- Each episode runs in a worker process of its own (worker.py) that the runner moves into a fresh
  cgroup v2 *before* the worker starts anything. Everything the worker starts afterwards (from any
  thread, daemonised or not, as any user, sandboxed or not: PostgreSQL, Redis, the services, the
  load generator, the broker's calls, the agent, the grader) inherits that cgroup, and only the
  kernel can take a process out of it. Ending an episode's processes is one write to
  `cgroup.kill`: no PID list, no race with a process that forks or changes PID.
- The cgroups live under `<cgroup2 mount><the runner's own cgroup>/arenac/runner-<pid>-<start>/`,
  one child per episode; the directory name carries the runner's identity (PID and start time in
  clock ticks), so a recycled PID is never mistaken for a live runner.
- A watchdog process per runner (`python -m arenac.runner.watchdog`) holds the read end of a pipe
  whose write end only the runner holds. When the runner dies, however it dies (SIGKILL
  included), the kernel closes that pipe; the watchdog then kills the runner's cgroups and reaps
  the episodes' scratch directories and records, and exits. A runner that exits normally closes
  the pipe too, and the watchdog finds nothing left to end.
- `reap_dead_runners()` is the backstop for a watchdog that died with its runner (a machine-wide
  kill): the next runner ends the cgroups of every runner that is gone.
- Where no writable cgroup v2 hierarchy exists (not root, no cgroup2 mount), `RunnerCgroups.open()`
  returns None with the reason: episodes then run bound only by the records of state.py, and the
  run's timeline says so (`bound_by`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BASE_NAME = "arenac"
_OPENED: tuple[int, tuple[RunnerCgroups | None, str]] | None = None  # this process's, once opened
KILL_WAIT_S = 10.0


def cgroup2_mount(mountinfo: Path = Path("/proc/self/mountinfo")) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
    a hybrid machine), or None."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] == "cgroup2":
            return Path(before.split(" ")[4])
    return None


def own_cgroup(pid: int | str = "self") -> str:
    """This process's cgroup v2 path ("/" at the root), from the `0::` line of /proc/PID/cgroup."""
    try:
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:] or "/"
    except OSError:
        pass
    return "/"


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when there is no such process or it is a zombie (dead, not yet reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields start after the last ')'
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])


def base_dir() -> Path | None:
    mount = cgroup2_mount()
    if mount is None:
        return None
    return mount / own_cgroup().lstrip("/") / BASE_NAME


@dataclass(frozen=True)
class EpisodeCgroup:
    path: Path

    def adopt(self, pid: int) -> None:
        """Move process `pid` into this cgroup (its future children follow it)."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def pids(self) -> list[int]:
        return cgroup_pids(self.path)

    def kill(self) -> list[int]:
        """End every process in the cgroup and remove it; returns the PIDs that were still there."""
        return kill_tree(self.path)


@dataclass
class RunnerCgroups:
    """This runner's cgroup directory and its watchdog."""

    path: Path
    watchdog: subprocess.Popen[bytes]
    _pipe: int  # the write end: the runner's death closes it, which wakes the watchdog
    _count: int = 0

    @classmethod
    def open(cls, state_root: Path) -> tuple[RunnerCgroups | None, str]:
        """This runner's cgroups and watchdog, or (None, why not); one of each per process, however
        many times it is asked (a long-lived caller must not gather watchdogs)."""
        global _OPENED
        if _OPENED is None or _OPENED[0] != os.getpid():
            _OPENED = (os.getpid(), cls._open(state_root))
        return _OPENED[1]

    @classmethod
    def _open(cls, state_root: Path) -> tuple[RunnerCgroups | None, str]:
        base = base_dir()
        if base is None:
            return None, "no cgroup v2 hierarchy is mounted"
        pid = os.getpid()
        path = base / f"runner-{pid}-{start_ticks(pid)}"
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            return None, f"cannot create a cgroup under {base.parent}: {error.strerror}"
        read_end, write_end = os.pipe()  # not inherited by any child but the watchdog (stdin)
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-m", "arenac.runner.watchdog", str(path), str(state_root)],
                stdin=read_end, stdout=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(read_end)
        return cls(path, watchdog, write_end), ""

    def episode(self, name: str) -> EpisodeCgroup:
        self._count += 1
        path = self.path / f"{self._count:04d}-{name}"
        path.mkdir()
        return EpisodeCgroup(path)


def cgroup_pids(path: Path) -> list[int]:
    """Every process in the cgroup and its descendants."""
    pids: list[int] = []
    for procs in sorted(path.rglob("cgroup.procs")):
        try:
            pids += [int(line) for line in procs.read_text().split()]
        except (OSError, ValueError):
            continue
    return pids


def _populated(path: Path) -> bool:
    try:
        return "populated 1" in (path / "cgroup.events").read_text()
    except OSError:
        return False


def kill_tree(path: Path) -> list[int]:
    """SIGKILL everything in the cgroup `path` and below (one write to cgroup.kill; on a kernel
    without it, frozen first so that nothing forks while it is killed), wait until it is empty,
    bounded, and remove the directories bottom-up. Returns the PIDs that were there."""
    if not path.is_dir():
        return []
    present = cgroup_pids(path)
    if present:
        kill_file = path / "cgroup.kill"
        if kill_file.exists():
            kill_file.write_text("1\n")
        else:  # kernels before 5.14
            (path / "cgroup.freeze").write_text("1\n")
            for pid in present:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            (path / "cgroup.freeze").write_text("0\n")
        deadline = time.monotonic() + KILL_WAIT_S
        while _populated(path) and time.monotonic() < deadline:
            time.sleep(0.02)
    for directory in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        _rmdir(directory)
    _rmdir(path)
    return present


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()  # a cgroup directory is removed with rmdir, control files and all
    except OSError:
        pass


def reap_dead_runners() -> list[str]:
    """End the cgroups of runners that are gone (their watchdog died with them); returns a line
    per runner cleaned up."""
    base = base_dir()
    if base is None or not base.is_dir():
        return []
    cleaned = []
    for runner in sorted(base.glob("runner-*")):
        try:
            _, pid, ticks = runner.name.split("-")
            alive = start_ticks(int(pid)) == int(ticks)
        except ValueError:
            alive = False
        if not alive:
            ended = kill_tree(runner)
            count = f" ({len(ended)} processes)" if ended else ""
            cleaned.append(f"ended the cgroup of runner {runner.name}{count}")
    return cleaned
