"""The agent's access for one episode: the broker serving the bundle's access surface.

The tools the agent finds on its PATH are thin clients of a broker inside the runner; every
decision (RBAC with Kubernetes semantics, admin paths, the database role) is made here, from the
bundle's own rbac/ objects and plan, and every call lands in actions.jsonl.

- `AgentAccess.start(...)`: the local substrate's doors, the brokered kubectl's cluster the
  running stack (broker/cluster.py `LocalCluster`).
- `AgentAccess.start_without_kubectl(...)`: a substrate on a Kubernetes cluster, where the agent
  holds a real kubectl (its own token, the runner's): the broker serves the plan's other tools,
  reaching the substrate at `endpoints` (its Services), and never kubectl. The pod replacements the
  agent makes are then the cluster's to see (runner/kube/pod_watch.py), not the broker's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from arenac.broker.cluster import LocalCluster
from arenac.broker.inflight import InFlight
from arenac.broker.server import ActionLog, Broker
from arenac.broker.tools import AgentClock, ToolBox, ToolTarget
from arenac.model.plan import brokered_tools
from arenac.sandbox import AGENT_RUN
from arenac.substrate.interface import Endpoints, SubstrateDriver

KUBECTL = "kubectl"


@dataclass
class AgentAccess:
    broker: Broker
    tools_dir: Path

    @classmethod
    def start(cls, bundle, stack, scratch: Path, log, on_declare, sandboxed: bool = False,
              token: str | None = None, listen: tuple[str, int] | None = None) -> AgentAccess:
        """`sandboxed`: the agent reaches the broker's socket where its sandbox mounts it. `token`:
        the broker's (default: a fresh secret); `listen`: also serve on TCP at (host, port), for an
        agent outside this machine's processes (external_agent.py)."""
        rbac = [yaml.safe_load(data.decode("utf-8")) for data in bundle.rbac_bytes]  # as pinned at opening
        toolbox = ToolBox(LocalCluster(stack), bundle.plan.access, rbac, time_scale=log.clock.time_scale,
                          on_declare=on_declare, agent_clock=_agent_clock(bundle.plan, log))
        return cls._serve(toolbox, brokered_tools(bundle.plan), scratch, log, sandboxed, token, listen)

    @classmethod
    def start_without_kubectl(cls, bundle, endpoints: Endpoints, substrate: SubstrateDriver, scratch: Path, log,
                              on_declare, token: str | None = None,
                              listen: tuple[str, int] | None = None) -> AgentAccess:
        """The broker for a substrate on a cluster (see the module's docstring): the plan's tools
        but kubectl, reaching the substrate at `endpoints`."""
        target = ToolTarget(lambda: endpoints, substrate, InFlight())
        toolbox = ToolBox(None, bundle.plan.access, (), time_scale=log.clock.time_scale, on_declare=on_declare,
                          agent_clock=_agent_clock(bundle.plan, log), target=target)
        tools = tuple(t for t in brokered_tools(bundle.plan) if t != KUBECTL)
        return cls._serve(toolbox, tools, scratch, log, False, token, listen)

    @classmethod
    def _serve(cls, toolbox: ToolBox, tools: tuple[str, ...], scratch: Path, log, sandboxed: bool,
               token: str | None, listen: tuple[str, int] | None) -> AgentAccess:
        broker = Broker(toolbox, tools=tools, on_action=ActionLog(log.path.parent / "actions.jsonl"),
                        clock=log.clock.now, token=token)
        broker.start(parent=scratch)  # reaped with the scratch directory, however the runner ends
        if listen is not None:
            broker.listen_tcp(*listen)
        (scratch / "agent").mkdir(mode=0o711, exist_ok=True)
        tools_dir = scratch / "agent" / "tools"
        broker.install_tools(tools_dir, scaled_sleep=True,
                             socket_as_seen=f"{AGENT_RUN}/broker.sock" if sandboxed else None)
        tools_dir.chmod(0o755)
        return cls(broker, tools_dir)

    @property
    def socket_dir(self) -> Path:
        return self.broker.socket_dir

    def agent_restarts(self) -> dict[str, int] | None:
        """Every workload's pod replacements by the agent so far (0 for the untouched); None
        without the brokered kubectl (the cluster's pod watch counts them there)."""
        cluster = self.broker.toolbox.cluster
        return cluster.agent_restarts() if cluster is not None else None

    def agent_env(self) -> dict[str, str]:
        return {"KUBECONFIG": "/dev/null"}  # kubectl here is the brokered one; no real cluster config leaks in

    def close_agent_access(self) -> int:
        """After the freeze nobody may act: the broker stops answering, and what the agent's calls
        still run (a long db-sql, an exec's leftovers) is ended. Returns how many were running."""
        self.broker.close()
        return self.broker.toolbox.inflight.end_all()

    def stop(self) -> None:
        self.broker.stop()


def _agent_clock(plan, log) -> AgentClock:
    # the doors open right before the agent starts: its window runs from here
    return AgentClock(log.clock.now, log.clock.now(), plan.timeline.agent_window_s, plan.timeline.soak_s)
