"""The runner's own fault-injection suite: a part of the episode fails at a phase; the trial must be
classified right.

Contract:
- A `Cell` names a part (a substrate process, the load generator, the episode worker, or the run
  directory's disk), a fault (`kill`: SIGKILL; `stop`: SIGSTOP, never continued; `full`: the run
  directory on a tmpfs too small for its evidence) and a phase, given as the event of
  events.jsonl after which the fault strikes.
- `run_cell(bundle, cell, workdir)` runs `arenac run BUNDLE --agent cmd:declare_repair_complete`
  (an agent that changes nothing, so no loss is its doing) as a subprocess, strikes at the phase,
  waits for the runner to finish (bounded) and returns a `CellResult`: the status and reason the
  runner reported, its exit code, and how many of the episode's processes (its cgroup's) were
  left running.
- `expected(cell)` is the status every cell must get: `infra_error`. The suite's agent changes
  nothing, so no loss may be scored as its failure, nor a trial scored at all. The control cell
  (`CONTROL`: nothing struck) must be `scored`.
- `markdown(results)` is the table of docs/reliability.md.

Striking needs root (signals to processes of other users, a tmpfs mount); the caller checks.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from arenac.runner.lifetime import base_dir, cgroup_pids

SUBSTRATE_PARTS = ("postgres", "redis", "gateway", "message")
PARTS = SUBSTRATE_PARTS + ("loadgen", "worker")
PHASES = {  # phase name: the event after which the fault strikes
    "warm-up": "load_started",
    "injection": "onset",
    "handover": "agent_started",
    "soak": "soak",
    "challenges": "snapshot:soak_end",
}
RUN_TIMEOUT_S = 240.0
AGENT = "cmd:declare_repair_complete"


@dataclass(frozen=True)
class Cell:
    part: str
    fault: str  # kill | stop | full
    phase: str

    @property
    def name(self) -> str:
        return f"{self.fault}-{self.part}-{self.phase}"


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    status: str  # the timeline's status, or "incomplete"
    reason: str
    exit_code: int | None
    left_running: int
    wall_s: float

    @property
    def as_expected(self) -> bool:
        return self.status == expected(self.cell) and self.left_running == 0


def expected(cell: Cell) -> str:
    return "scored" if cell.fault == "none" else "infra_error"


def all_cells() -> list[Cell]:
    cells = [Cell(part, fault, phase) for part in PARTS for fault in ("kill", "stop") for phase in PHASES]
    return [CONTROL] + cells + [Cell("disk", "full", "warm-up")]


CONTROL = Cell("none", "none", "none")  # nothing struck: the same run is scored (the other side)


def event_names(run_dir: Path) -> list[str]:
    """The events of the run's events.jsonl so far, snapshots with their label (`snapshot:soak_end`)."""
    try:
        lines = (run_dir / "events.jsonl").read_text().splitlines()
    except OSError:
        return []
    names = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        names.append(record["event"] + (f":{record['label']}" if record["event"] == "snapshot" else ""))
    return names


def _episode_pids(state: Path) -> dict[str, int]:
    """PIDs by part: the substrate's own ledger (via the scratch directory the state record names)
    and the runner's record (the load generator)."""
    pids: dict[str, int] = {}
    for record in state.glob("*.json"):
        try:
            data = json.loads(record.read_text())
            pids.update({key.split(":")[0]: int(key.split(":")[1]) for key in data.get("pids", {})})
            ledger = json.loads((Path(data["scratch"]) / "substrate" / "pids.json").read_text())
            pids.update({name: int(entry["pid"]) for name, entry in ledger.items()})
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return pids


def _worker_pid(runner: int) -> int | None:
    try:
        children = psutil.Process(runner).children()
    except psutil.Error:
        return None
    workers = [c.pid for c in children if "arenac.runner.worker" in " ".join(c.cmdline())]
    return workers[0] if workers else None


def _tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True)


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def run_cell(bundle: Path, cell: Cell, workdir: Path, time_scale: float = 0.1) -> CellResult:
    started = time.monotonic()
    state = workdir / "state"
    run_dir = workdir / "run"
    if cell.fault == "full":
        _tmpfs(workdir / "disk", "96k")  # the evidence of one episode is about a megabyte
        run_dir = workdir / "disk" / "run"
    env = dict(os.environ, ARENAC_STATE_DIR=str(state))
    runner = subprocess.Popen([sys.executable, "-m", "arenac.cli", "run", str(bundle), "--agent", AGENT,
                               "--time-scale", f"{time_scale:g}", "--out", str(run_dir)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = base_dir()
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        struck = cell.fault in ("full", "none")
        while runner.poll() is None and time.monotonic() < deadline:
            if base is not None:
                for group in base.glob(f"runner-{runner.pid}-*"):
                    seen |= set(cgroup_pids(group))
            if not struck and PHASES[cell.phase] in event_names(run_dir):
                struck = _strike(cell, runner.pid, state)
            time.sleep(0.05)
        if runner.poll() is None:
            runner.kill()
        stdout, _ = runner.communicate(timeout=30)
        left = still_running(seen)
        status, reason = _reported(stdout.decode(errors="replace"))
        return CellResult(cell, status, reason, runner.returncode, len(left), round(time.monotonic() - started, 1))
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        for pid in still_running(seen):  # a failed cell must not leave its processes to the next one
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if cell.fault == "full":
            _umount(workdir / "disk")


def _strike(cell: Cell, runner: int, state: Path) -> bool:
    """Deliver the fault; False while its target is not known yet."""
    pid = _worker_pid(runner) if cell.part == "worker" else _episode_pids(state).get(cell.part)
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL if cell.fault == "kill" else signal.SIGSTOP)
    return True


def still_running(pids) -> list[int]:
    """The PIDs whose process still runs (a zombie counts as gone)."""
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            pass
    return alive


_RESULT_LINE = re.compile(r"^\S+: (?P<status>[a-z_]+)(?: \((?P<reason>.*)\))?, reward \d")


def _reported(stdout: str) -> tuple[str, str]:
    """The status and reason of the runner's result line (`VARIANT: STATUS (REASON), reward ...`)."""
    for line in reversed(stdout.splitlines()):
        match = _RESULT_LINE.match(line)
        if match:
            return match["status"], match["reason"] or ""
    return "no result", stdout.strip().splitlines()[-1] if stdout.strip() else "the runner printed nothing"


def markdown(results: list[CellResult]) -> str:
    lines = ["| part | fault | phase | expected | status | reason | left running |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        mark = "" if r.as_expected else " **(unexpected)**"
        reason = r.reason.replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| {r.cell.part} | {r.cell.fault} | {r.cell.phase} | {expected(r.cell)} | "
                     f"{r.status}{mark} | {reason} | {r.left_running} |")
    return "\n".join(lines) + "\n"
