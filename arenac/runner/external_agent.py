"""An agent the harness does not start: `arenac harness episode`'s (a Harbor task's `main`
container, which reaches the broker over TCP with a token baked into its tool clients).

The seam is the backend (backend.py): `ExternalBackend` is the `local` backend (substrate, load,
broker, snapshots, restarts: processes of this machine) with two steps replaced, so that the trial
and the plan (trial.py, episode.py) run unchanged:

- `open_doors` opens the broker as the local backend does, with the given token, also listening
  on TCP at `listen`;
- `start_agent` starts nothing: it records the handover (status.json `handed_over`) and returns
  an `ExternalAgent`, which is "running" until `finish` asks for the end of the agent's phase
  (external_control.py's `finish.request`). The plan's window thus ends at the first of the
  declaration, the window running out, or `finish`. Its `freeze` closes the broker to the agent
  (calls in flight ended, later calls refused: broker/server.py `close`) and stops no process:
  boundary.json says agent "external", method "external: broker closed", 0 processes.

`hand_over(doors, spec, log_path, board, on_frozen)` is that `start_agent`, shared with the
cluster's backend (runner/kube/pod_backend.py `ClusterBackend`: the same handover and freeze, its
substrate the one a chart installed).

`run_external_episode(bundle, control, board, listen, token, time_scale, stop, cluster=None)` runs
the one episode with `trial.run_episode` and keeps status.json up to date through the phases
(external_control.py); with `cluster` (a `ClusterTarget`), on the cluster's backend.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from arenac.model.harness_status import HarnessPhase, HarnessStatus
from arenac.runner.access import AgentAccess
from arenac.runner.agents import EXTERNAL, AgentSpec, FreezeRecord
from arenac.runner.backend import Backend
from arenac.runner.bundle import RunnableBundle
from arenac.runner.external_control import Control
from arenac.runner.local_backend import LocalBackend
from arenac.runner.options import EpisodeOptions, EpisodeResult, Isolation
from arenac.runner.records import EventLog
from arenac.runner.state import StateDir
from arenac.runner.trial import run_episode
from arenac.sandbox import SandboxChoice

if TYPE_CHECKING:  # the cluster's backend is imported only when asked for (it needs the kubernetes extra)
    from arenac.runner.kube.pod_backend import ClusterTarget

FREEZE_METHOD = "external: broker closed"


class StatusBoard:
    """status.json, kept by the episode's process (one writer; threads of the episode call it)."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self._lock = threading.Lock()
        self.status = HarnessStatus(phase="provisioning", pid=os.getpid())

    def update(self, phase: HarnessPhase | None = None, **fields: object) -> None:
        with self._lock:
            changes = dict(fields, **({"phase": phase} if phase else {}))
            self.status = self.status.model_copy(update=changes)
            self.control.write(self.status)


@dataclass
class ExternalAgent:
    """The agent of another container, as the plan's window sees it (backend.py's RunningAgent)."""

    doors: AgentAccess
    finish_requested: Callable[[], bool]
    on_frozen: Callable[[], None]
    frozen: bool = False

    def running(self) -> bool:
        return not self.frozen and not self.finish_requested()

    @property
    def exit_code(self) -> int | None:
        return None  # no process of ours

    def freeze(self) -> FreezeRecord:
        if not self.frozen:
            self.frozen = True
            self.doors.broker.close()
            self.on_frozen()
        return FreezeRecord(FREEZE_METHOD, 0, ())


class ExternalBackend(LocalBackend):
    """The local backend, its agent external (see the module's docstring)."""

    def __init__(self, bundle: RunnableBundle, scratch: Path, state: StateDir, time_scale: float,
                 sandbox: SandboxChoice, agent_ro: tuple[Path, ...] = (), agent_network: str = "private", *,
                 token: str, listen: tuple[str, int], board: StatusBoard) -> None:
        super().__init__(bundle, scratch, state, time_scale, sandbox, agent_ro, agent_network)
        self.token, self.listen, self.board = token, listen, board

    def open_doors(self, log: EventLog, on_declare: Callable[[], None]) -> AgentAccess:
        self.doors = AgentAccess.start(self.bundle, self._stack(), self.scratch, log, on_declare,
                                       token=self.token, listen=self.listen)
        return self.doors

    def start_agent(self, spec: AgentSpec, log_path: Path) -> ExternalAgent:
        return hand_over(self.doors, spec, log_path, self.board)


def hand_over(doors: AgentAccess | None, spec: AgentSpec, log_path: Path, board: StatusBoard,
              on_frozen: Callable[[], None] | None = None) -> ExternalAgent:
    """Start nothing: record the handover and return the external agent's stand-in, whose freeze
    closes `doors` (then calls `on_frozen`, then marks status.json `agent_done`)."""
    if spec.name != EXTERNAL or doors is None:
        raise RuntimeError("the external backend hands over to the external agent only, doors open first")
    address = doors.broker.tcp_address
    log_path.write_text(f"the agent is external: it acts through the broker at {address}; "
                        "nothing of it runs here\n")

    def frozen() -> None:
        if on_frozen is not None:
            on_frozen()
        board.update("agent_done")

    agent = ExternalAgent(doors, board.control.finish_requested, on_frozen=frozen)
    board.update("handed_over", handed_over=True)
    return agent


def run_external_episode(bundle: RunnableBundle, control: Control, board: StatusBoard, listen: tuple[str, int],
                         token: str, time_scale: float, stop: threading.Event,
                         cluster: ClusterTarget | None = None, inject_faults: bool = True) -> EpisodeResult:
    """The one episode of `arenac harness episode`; status.json says `graded` when it returns with
    a verdict (the caller writes `ended`). `cluster`: against the substrate a chart installed there;
    `inject_faults` False: the healthy control."""
    if cluster is None:
        bound_by = "process records (in the harness container's episode process)"
        make_backend: Callable[..., Backend] = partial(ExternalBackend, token=token, listen=listen, board=board)
    else:
        from arenac.runner.kube.pod_backend import ClusterBackend

        bound_by = f"the harness pod's episode process (substrate in namespace {cluster.namespace})"
        make_backend = partial(ClusterBackend, token=token, listen=listen, board=board, target=cluster)
    options = EpisodeOptions(agent=EXTERNAL, time_scale=time_scale, out=control.run_dir, inject_faults=inject_faults,
                             isolation=Isolation(sandbox="none"), bound_by=bound_by)
    result = run_episode(bundle, options, stop, make_backend=make_backend)
    if (control.run_dir / "verdict.json").is_file():
        board.update("graded", trial_status=result.status, reward=result.reward, reason=result.reason or None)
    else:  # the run directory would not take the evidence: nothing was graded
        board.update("ended", reason=result.reason or "the episode was not graded")
    return result
