"""The runner's state directory: what each live episode started, so that a runner killed with
SIGKILL can be cleaned up by the next one.

Where the episode cgroups of lifetime.py can be had they bind the processes and these records are
the second line; without them (not root, no cgroup v2), they are the only one.

Each episode writes `<state>/<id>.json` with the runner's PID and every PID it started (with the
process's start time, so a recycled PID is never killed) and its scratch directory. `reap()` ends
the processes of episodes whose runner is gone and removes their scratch directories.
`process_identity` and `identity_alive` are how a record names a process and tells it still runs
(the Kubernetes backend's trial records, runner/kube/records.py, use them too).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from arenac.core.serialize import write_atomic
from arenac.substrate.procs import PidLedger


@dataclass
class StateDir:
    root: Path

    @classmethod
    def default(cls) -> StateDir:
        base = os.environ.get("ARENAC_STATE_DIR") or os.path.join(
            os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "arenac")
        root = Path(base)
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    def _record(self, scratch: Path) -> Path:
        return self.root / f"{scratch.name}.json"

    def register(self, scratch: Path) -> StateDir:
        self._write(scratch, {"runner": process_identity(os.getpid()), "scratch": str(scratch), "pids": {}})
        return self

    def record_pids(self, scratch: Path, pids: dict[str, int]) -> None:
        path = self._record(scratch)
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {
            "runner": process_identity(os.getpid()), "scratch": str(scratch), "pids": {}}
        for name, pid in pids.items():
            identity = process_identity(pid)
            if identity:
                data["pids"][f"{name}:{pid}"] = identity
        self._write(scratch, data)

    def unregister(self, scratch: Path) -> None:
        self._record(scratch).unlink(missing_ok=True)

    def _write(self, scratch: Path, data: dict) -> None:
        write_atomic(self._record(scratch), json.dumps(data, sort_keys=True))

    def reap(self) -> list[str]:
        """End what dead runners left behind; returns a line per thing cleaned up."""
        cleaned = []
        for record in sorted(self.root.glob("*.json")):
            try:
                data = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            if identity_alive(data.get("runner")):
                continue
            for key, identity in data.get("pids", {}).items():
                if identity_alive(identity):
                    try:
                        process = psutil.Process(identity["pid"])
                        for child in process.children(recursive=True):
                            child.kill()
                        process.kill()
                        cleaned.append(f"killed {key}")
                    except psutil.Error:
                        pass
            scratch = Path(data.get("scratch", ""))
            if scratch.name.startswith("arenac-episode-") and scratch.exists():
                # the stack records each process as it spawns it: what a runner killed during
                # provisioning started before it could record anything here
                cleaned += [f"killed {name} (stack record)" for name in _end_stack_leftovers(scratch)]
                shutil.rmtree(scratch, ignore_errors=True)
                cleaned.append(f"removed {scratch}")
            record.unlink(missing_ok=True)
        return cleaned


def _end_stack_leftovers(scratch: Path) -> list[str]:
    try:
        return PidLedger(scratch / "substrate" / "pids.json").end_leftovers()
    except (OSError, ValueError, KeyError):
        return []


def process_identity(pid: int) -> dict | None:
    """A running process as a record keeps it: its PID and start time (None if there is none)."""
    try:
        return {"pid": pid, "started": psutil.Process(pid).create_time()}
    except psutil.Error:
        return None


def identity_alive(identity: dict | None) -> bool:
    """Whether the process a record kept (`process_identity`) still runs: the same PID, started at
    the same time (a recycled PID is another process), and not a zombie."""
    if not identity:
        return False
    try:
        process = psutil.Process(identity["pid"])
        # a zombie is dead: nothing it started is looked after any more (and a PID 1 that does
        # not reap, as in some containers, keeps it a zombie for good)
        return abs(process.create_time() - identity["started"]) < 0.01 and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
