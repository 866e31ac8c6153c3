"""The seam between an episode and the place it runs: the `Backend` protocol.

The episode (episode.py, inside the trial of trial.py) owns the plan: its clock, onsets and
manifestation, the handover, the freeze, the soak, the challenges, the evidence and the grade. A
backend owns the machinery the plan runs on, and nothing of the plan's timing:

- `provision(healthy)` starts the substrate from the bundle (its faults' chart part applied unless
  `healthy`) and returns the harness's hands on it (`HarnessIO`: snapshots, triggers, admin calls).
- `pids()` names the substrate's running processes (the local backend's; a cluster's pods).
- `start_load(evidence, live_file)` starts the load generator, which writes the ledger and the
  acknowledged writes into `evidence`; plan time 0 is its clock's zero.
- `watch(clock, on_loss)` watches every part the backend started, the load generator's too (a lost
  one is the infrastructure's failure unless the agent caused it: watch.py).
- `open_doors(log, on_declare)` opens the agent's access: the brokered tools, every call logged in
  actions.jsonl beside `log`; `on_declare` is called when the agent declares.
- `start_agent(spec, log_path)` starts the agent against those doors, isolated as the backend can,
  and returns it as a `RunningAgent` (running, freeze, exit code).
- `restart(service)` restarts one service (the restart challenge); `snapshot(t, baseline_ids,
  configmaps)` records the state that scope and safety read (`configmaps=False`: without what the
  workloads' ConfigMaps hold, as a live check's snapshot needs none).
- `stop_agent_side()` closes the doors and stops the load; `stop_substrate()` then stops the rest.
  Both are safe to call whatever was started, and more than once.

The `local` backend (local_backend.py) runs everything as processes of this machine. A backend
raises what it cannot do as an exception: the episode makes it an infrastructure failure, or the
agent's when the substrate refused the harness after the handover.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # types only: a backend's modules are imported by the backend that needs them
    from arenac.model.evidence import Snapshot
    from arenac.runner.agents import AgentSpec, FreezeRecord
    from arenac.runner.clock import EpisodeClock
    from arenac.runner.harness_io import HarnessIO
    from arenac.runner.records import EventLog
    from arenac.runner.watch import LossWatch


class RunningLoad(Protocol):
    """The load generator, started: what the plan needs of it (the backend stops it)."""

    zero: float  # time.monotonic() of the generator's clock zero (plan time 0)
    warmup_end_s: float  # plan seconds: when the first load cycle starts


class AgentDoors(Protocol):
    """The agent's access, open: the plan closes it at the freeze (the backend stops it)."""

    def close_agent_access(self) -> int:
        """Stop answering the agent and end its calls still running; returns how many were."""
        ...


class RunningAgent(Protocol):
    """The agent, started: the plan's window watches it and freezes it (agents.py's AgentProcess;
    an external agent's stand-in, external_agent.py)."""

    def running(self) -> bool:
        """False once the agent is done (its process exited; an external agent's phase ended)."""
        ...

    def freeze(self) -> FreezeRecord:
        """End everything of the agent's and say how; idempotent."""
        ...

    @property
    def exit_code(self) -> int | None: ...


class Backend(Protocol):
    name: str

    def provision(self, healthy: bool) -> HarnessIO: ...
    def pids(self) -> dict[str, int]: ...
    def start_load(self, evidence: Path, live_file: Path) -> RunningLoad: ...
    def watch(self, clock: EpisodeClock, on_loss: Callable[[], None]) -> LossWatch: ...
    def open_doors(self, log: EventLog, on_declare: Callable[[], None]) -> AgentDoors: ...
    def start_agent(self, spec: AgentSpec, log_path: Path) -> RunningAgent: ...
    def restart(self, service: str) -> None: ...
    def snapshot(self, t: float, baseline_ids: dict[str, int] | None, configmaps: bool = True) -> Snapshot: ...
    def stop_agent_side(self) -> None: ...
    def stop_substrate(self) -> None: ...
