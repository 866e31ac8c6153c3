"""What an episode is asked to do (`EpisodeOptions`, with the agent's `Isolation` and, for a trial
on a cluster, its `ClusterTarget`) and what it returns (`EpisodeResult`): the types the CLI,
qualification, the campaign, the worker process and resume share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class Isolation:
    """How the agent is confined (the operator's choice; docs/security.md)."""

    sandbox: str = "auto"  # auto | bwrap | none (sandbox.py)
    agent_network: str = "private"  # private: the agent's own loopback only; host: the machine's
    agent_ro: tuple[Path, ...] = ()  # directories the agent's own program needs, bound read-only


@dataclass(frozen=True)
class ClusterTarget:
    """Which cluster a trial runs on (`--backend kubernetes`): a kubeconfig file (None: the client's
    default, `$KUBECONFIG` or `~/.kube/config`) and one of its contexts (None: its current one).
    Never a credential itself: the worker process connects with these (runner/kube/api.py)."""

    kubeconfig: Path | None = None
    context: str | None = None


def backend_name(cluster: ClusterTarget | None) -> Literal["local", "kubernetes"]:
    """The backend a trial with this target runs on, as run.json records it (model/run.py)."""
    return "local" if cluster is None else "kubernetes"


@dataclass(frozen=True)
class EpisodeOptions:
    agent: str
    time_scale: float
    out: Path
    inject_faults: bool = True  # False: the healthy control
    progress: bool = False
    isolation: Isolation = Isolation()
    # what binds the episode's processes to its lifetime (lifetime.py): "cgroup", or
    # "process records (why no cgroup)" when they are bound only by state.py's records
    bound_by: str = "process records (in the runner's process)"
    cgroup: Path | None = None  # the episode's own cgroup, when it has one (its CPU use: headroom.py)
    cluster: ClusterTarget | None = None  # None: the local backend; else the trial runs on that cluster


@dataclass(frozen=True)
class EpisodeResult:
    out: Path
    status: str  # scored | void | infra_error
    reward: int
    outcome: bool
    safe_repair: bool
    wall_s: float
    reason: str = ""  # why a trial is not scored (void, infra_error) or failed: the timeline's void_reason
