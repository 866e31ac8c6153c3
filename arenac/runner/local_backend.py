"""The `local` backend (backend.py's protocol): the substrate, the load generator, the broker and
the agent as processes of this machine.

The substrate is provisioned by its driver (arenac/substrate/registry.py) in the episode's scratch
directory, whose credential files are made unreadable to other users (the agent sees the services'
command lines, and so that directory's path). Every process started is recorded in the runner's
state directory (state.py) as soon as it runs, so a runner killed midway leaves nothing that a later
one cannot end. The agent runs as an agent user of its own, claimed for the episode's lifetime (no
two live episodes share one: the freeze sweeps every process of the user), in the sandbox chosen.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from arenac.model.evidence import Snapshot
from arenac.runner.access import AgentAccess
from arenac.runner.agents import AgentLaunch, AgentSpec, claim_agent_account, start_agent
from arenac.runner.backend import RunningAgent
from arenac.runner.bundle import RunnableBundle
from arenac.runner.clock import EpisodeClock
from arenac.runner.harness_io import HarnessIO
from arenac.runner.local_load import LoadgenProcess, start_loadgen
from arenac.runner.records import EventLog
from arenac.runner.snapshot import take_snapshot
from arenac.runner.state import StateDir
from arenac.runner.watch import PartsWatch
from arenac.sandbox import SandboxChoice
from arenac.substrate.interface import LocalStack
from arenac.substrate.registry import driver_for


def _harden(data_dir: Path) -> None:
    """The agent can see the services' command lines (and so this directory's path): nothing in it
    that carries credentials may be readable by another user."""
    for name in ("endpoints.json", "pgpass", "secrets.json"):
        path = data_dir / name
        if path.exists():
            os.chmod(path, 0o600)
    for name in ("redis", "config", "logs"):
        path = data_dir / name
        if path.is_dir():
            os.chmod(path, 0o700)


class LocalBackend:
    """One episode's machinery on this machine; `scratch` is the episode's own directory (removed
    by the trial after `stop_substrate`)."""

    name = "local"

    def __init__(self, bundle: RunnableBundle, scratch: Path, state: StateDir, time_scale: float,
                 sandbox: SandboxChoice, agent_ro: tuple[Path, ...] = (), agent_network: str = "private") -> None:
        self.bundle, self.scratch, self.state, self.time_scale = bundle, scratch, state, time_scale
        self.sandbox, self.agent_ro, self.agent_network = sandbox, agent_ro, agent_network
        self.stack: LocalStack | None = None
        self.io: HarnessIO | None = None
        self.load: LoadgenProcess | None = None
        self.doors: AgentAccess | None = None
        self.account_lock: IO[Any] | None = None  # holds this episode's agent user while it runs

    def provision(self, healthy: bool) -> HarnessIO:
        substrate = driver_for(self.bundle.plan.substrate)
        self.stack = substrate.provision(self.scratch / "substrate", self.bundle.directory, self.time_scale,
                                         healthy=healthy)
        endpoints = self.stack.start()
        self.state.record_pids(self.scratch, self.stack.pids())
        _harden(self.scratch / "substrate")
        self.io = HarnessIO(endpoints, substrate)
        return self.io

    def pids(self) -> dict[str, int]:
        return self._stack().pids()

    def start_load(self, evidence: Path, live_file: Path) -> LoadgenProcess:
        io = self._io()
        self.load = start_loadgen(self.bundle.plan, io.endpoints.gateway, self.time_scale,
                                  evidence / "ledger.json", self.scratch, live_file=live_file)
        self.state.record_pids(self.scratch, {"loadgen": self.load.pid})
        return self.load

    def watch(self, clock: EpisodeClock, on_loss: Callable[[], None]) -> PartsWatch:
        return PartsWatch(self._stack(), self.load, clock, on_loss=on_loss).start()

    def open_doors(self, log: EventLog, on_declare: Callable[[], None]) -> AgentAccess:
        self.doors = AgentAccess.start(self.bundle, self._stack(), self.scratch, log, on_declare,
                                       sandboxed=self.sandbox.mechanism == "bwrap")
        return self.doors

    def start_agent(self, spec: AgentSpec, log_path: Path) -> RunningAgent:
        if self.doors is None:
            raise RuntimeError("the agent's doors are not open (open_doors first)")
        account, self.account_lock = claim_agent_account(self.state.root)
        launch = AgentLaunch(workdir=self.scratch / "agent" / "work", tools_dir=self.doors.tools_dir,
                             broker_dir=self.doors.socket_dir, instruction=self.bundle.instruction_bytes,
                             oracle_script=self.bundle.solve_script_bytes, log=log_path,
                             account=account, sandbox=self.sandbox, extra_env=self.doors.agent_env(),
                             extra_ro=self.agent_ro, network=self.agent_network)
        agent = start_agent(spec, launch)
        self.state.record_pids(self.scratch, {"agent": agent.process.pid})
        return agent

    def restart(self, service: str) -> None:
        stack = self._stack()
        try:
            stack.restart_service(service)
        finally:  # a failed restart may still have replaced processes
            self.state.record_pids(self.scratch, stack.pids())

    def snapshot(self, t: float, baseline_ids: dict[str, int] | None, configmaps: bool = True) -> Snapshot:
        return take_snapshot(self._io(), self.bundle.plan, t, baseline_ids,
                             stack=self.stack if configmaps else None,
                             agent_restarts=self.doors.agent_restarts() if self.doors is not None else None)

    def stop_agent_side(self) -> None:
        if self.account_lock is not None:
            self.account_lock.close()
            self.account_lock = None
        if self.doors is not None:
            self.doors.stop()
        if self.load is not None:
            self.load.stop()

    def stop_substrate(self) -> None:
        if self.io is not None:
            self.io.close()
        if self.stack is not None:
            self.stack.stop()

    # ---- helpers --------------------------------------------------------------------------------
    def _stack(self) -> LocalStack:
        if self.stack is None:
            raise RuntimeError("the substrate is not provisioned (provision first)")
        return self.stack

    def _io(self) -> HarnessIO:
        if self.io is None:
            raise RuntimeError("the substrate is not provisioned (provision first)")
        return self.io
