"""The agent's sandbox on the local backend: what its processes can see, reach and outlive.

It sits below the runner and the broker (both use it: the agent's own processes, and the commands
a `kubectl exec` runs "in a pod"), and imports nothing of theirs.

Contract:
- `probe(mechanism)` says whether the sandbox can be had here: `"bwrap"` (bubblewrap, from
  Debian's `bubblewrap` package, run unprivileged in a user namespace) or `"none"`. `"auto"`
  picks bwrap when it works and otherwise answers `none` with the reason, which the runner
  prints as a warning and records; asking for `"bwrap"` where it does not work is a refusal
  (`SandboxUnavailable`).
- `SandboxLayout` is the agent's whole view of the filesystem: the system's read-only
  directories (/usr, /etc and the merged-/usr links /bin, /lib, ...), its working directory
  (read-write, at `/home/agent`, also its HOME), its tools (read-only, at `/opt/arenac/bin`), the
  broker's socket directory (at `/run/arenac`), directories the operator names read-only
  (`extra_ro`: the agent's own program), a fresh tmpfs of bounded size for /tmp, /var/tmp, /dev/shm
  and /run (`SCRATCH_TMPFS_BYTES`), a /proc
  of its own PID namespace and a minimal /dev. Nothing else: not the project checkout, the
  installed compiler, the library, tasks/, the bundle, the run or scratch directory, nor
  another episode's leftovers (the compiler's directories and the runner's working directory are
  covered by an empty tmpfs should they lie under /usr or /etc). A fresh tmpfs is empty at the
  start and gone with the namespace.
- `command(argv, layout)` is the bwrap command line: new PID, IPC, UTS and cgroup namespaces,
  a network namespace of its own (only its own loopback) unless `network="host"`, no further
  user namespaces, a new terminal session, and death with the runner. The mount list is passed
  on a file descriptor, so the sandbox's own command line (the only harness-made process the
  agent can see) reveals none of the host paths.
- `exec_mount_args(scratch, binaries)` is the same confinement for a `kubectl exec` command: the
  read-only system, its own scratch directory, the datastore clients it needs, a private PID
  namespace, and the machine's network (a pod reaches its Services).
- A sandboxed agent is ended in one step: killing the outer bwrap kills the namespace's init,
  and with it the kernel kills every process of the namespace, however it detached (setsid,
  double fork; no nested namespace can be made: --disable-userns). `namespace_members(ns)` lists
  the host PIDs still in a PID namespace, so the freeze can prove that none remain.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import arenac
import arenac.grammar
import arenac.library
from arenac.substrate.registry import driver_for, substrate_names

AGENT_HOME = "/home/agent"
AGENT_TOOLS = "/opt/arenac/bin"
AGENT_RUN = "/run/arenac"
AGENT_PATH = f"{AGENT_TOOLS}:/usr/local/bin:/usr/bin:/bin"
# the read-only system: programs, libraries, and /etc (users, certificates, resolver) for the
# agent's own program; nothing under them is the harness's
SYSTEM_DIRS = ("/usr", "/etc")
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
MECHANISMS = ("auto", "bwrap", "none")


class SandboxUnavailable(Exception):
    """The sandbox asked for cannot be had on this machine; the message says why and what to install."""


@dataclass(frozen=True)
class SandboxChoice:
    mechanism: str  # bwrap | none
    reason: str  # why `none` was chosen (empty for bwrap)


@dataclass(frozen=True)
class SandboxLayout:
    workdir: Path
    tools: Path
    broker_dir: Path
    extra_ro: tuple[Path, ...] = ()
    network: str = "private"  # private: its own loopback only; host: the machine's network
    env: dict[str, str] = field(default_factory=dict)


def probe(mechanism: str = "auto") -> SandboxChoice:
    if mechanism not in MECHANISMS:
        raise SandboxUnavailable(f"unknown sandbox {mechanism!r}: use {', '.join(MECHANISMS)}")
    if mechanism == "none":
        return SandboxChoice("none", "the operator asked for no sandbox")
    problem = _bwrap_problem()
    if not problem:
        return SandboxChoice("bwrap", "")
    if mechanism == "bwrap":
        raise SandboxUnavailable(problem)
    return SandboxChoice("none", problem)


_PROBED: dict[str, str] = {}


def _bwrap_problem() -> str:
    """'' when an unprivileged bwrap can build the agent's namespaces here, else why not (cached)."""
    if "bwrap" in _PROBED:
        return _PROBED["bwrap"]
    binary = shutil.which("bwrap")
    if binary is None:
        problem = "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    else:
        argv = [binary, *_system_mounts(), "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=20, stdin=subprocess.DEVNULL,
                                  **_as_nobody_if_root())
            problem = "" if done.returncode == 0 else (
                f"bwrap cannot create the agent's namespaces here: {done.stderr.decode(errors='replace').strip()}")
        except (OSError, subprocess.TimeoutExpired) as error:
            problem = f"bwrap does not run here: {error}"
    _PROBED["bwrap"] = problem
    return problem


def _as_nobody_if_root() -> dict:
    # the agent runs bwrap as an unprivileged user: probe the same way (root always could)
    if os.geteuid() != 0:
        return {}

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return {}
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": [], "cwd": "/"}


def _system_mounts() -> list[str]:
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        if os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
    for link in MERGED_USR:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    return args


def mount_args(layout: SandboxLayout) -> list[str]:
    """The bwrap arguments that build the agent's filesystem and namespaces (order matters:
    a tmpfs first, then what is bound inside it)."""
    args = _base_mounts()
    args += ["--tmpfs", "/home",
             "--bind", str(layout.workdir), AGENT_HOME,
             "--ro-bind", str(layout.tools), AGENT_TOOLS,
             "--bind", str(layout.broker_dir), AGENT_RUN]
    for path in layout.extra_ro:
        args += ["--ro-bind", str(path), str(path)]
    args += _namespace_flags(layout.network) + ["--chdir", AGENT_HOME, "--clearenv"]
    for name, value in sorted(layout.env.items()):
        args += ["--setenv", name, value]
    return args


def exec_mount_args(scratch: Path, binaries: tuple[Path, ...]) -> list[str]:
    """A `kubectl exec` command's sandbox: the same read-only system and private PID namespace as
    the agent's, its scratch directory (HOME, working directory) read-write at its own path, the
    datastore client binaries it needs read-only, and the machine's network (the "pod" reaches the
    stack's loopback ports, as a container reaches its Services)."""
    args = _base_mounts() + ["--bind", str(scratch), str(scratch)]
    for path in binaries:
        args += ["--ro-bind", str(path), str(path)]
    return args + _namespace_flags("host") + ["--chdir", str(scratch)]


SCRATCH_TMPFS_BYTES = {"/tmp": 512 << 20, "/var/tmp": 64 << 20, "/dev/shm": 64 << 20, "/run": 16 << 20}


def _base_mounts() -> list[str]:
    args = _system_mounts()
    args += ["--proc", "/proc", "--dev", "/dev"]
    # sized: a tmpfs is memory, and an agent that fills the machine's memory starves the harness
    for path, size in SCRATCH_TMPFS_BYTES.items():
        args += ["--size", str(size), "--tmpfs", path]
    for path in hidden_paths():
        args += ["--tmpfs", path]  # the compiler, its library and grammar, were they under /usr
    return args


def _namespace_flags(network: str) -> list[str]:
    flags = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "agent"]
    if network != "host":
        flags.append("--unshare-net")
    # no user namespace of its own beyond the one bwrap makes: nothing to build a nested sandbox
    # (or a PID namespace the freeze would have to find) with; its own session: no TIOCSTI
    return flags + ["--unshare-user", "--disable-userns", "--new-session", "--die-with-parent"]


def command(argv: list[str], args_fd: int, info_fd: int | None = None) -> list[str]:
    """bwrap reading its mount list from `args_fd` (and writing the namespace's init PID to `info_fd`)."""
    binary = shutil.which("bwrap") or "bwrap"
    info = ["--info-fd", str(info_fd)] if info_fd is not None else []
    return [binary, "--args", str(args_fd), *info, "--", *argv]


def encode_args(args: list[str]) -> bytes:
    return b"".join(arg.encode() + b"\0" for arg in args)


def hidden_paths() -> list[str]:
    """The installed compiler's own directories (package, library, grammar), the substrates' code
    the runner runs locally (`SubstrateDriver.private_dirs`: spine's releases' defects are in its
    code) and the runner's working directory (a checkout holds tasks/ and golden bundles) where
    they lie inside a system directory the sandbox shows: each is covered by an empty tmpfs."""
    candidates = {os.path.dirname(os.path.realpath(file))
                  for file in (arenac.__file__, arenac.grammar.__file__, arenac.library.__file__)}
    candidates |= {os.path.realpath(path) for name in substrate_names() for path in driver_for(name).private_dirs}
    candidates.add(os.path.realpath(os.getcwd()))
    return sorted(path for path in candidates
                  if any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS) and path not in SYSTEM_DIRS)


def pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def namespace_members(namespace: str) -> list[int]:
    """Host PIDs of every live process in the PID namespace `namespace` (the sandbox allows no
    nested namespaces: --disable-userns, and no capability to make one without)."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and pid_namespace(int(entry)) == namespace and not is_zombie(int(entry)):
            members.append(int(entry))
    return sorted(members)


def is_zombie(pid: int) -> bool:
    """A dead process its parent has not reaped yet: it runs nothing and holds nothing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True
