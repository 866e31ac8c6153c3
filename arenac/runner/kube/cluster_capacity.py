"""How many trials a cluster holds side by side now: `--jobs` (a campaign's `jobs`) checked against
the nodes before the trials start (issue 13, item 6; docs/kubernetes.md, "Capacity").

Contract:

- `node_room(api)` is the room each node has for a trial's pods now: for every node that takes new
  pods (Ready, not cordoned, without a NoSchedule or NoExecute taint: a trial's pods tolerate none)
  its `status.allocatable` (cpu, memory, ephemeral storage, pod slots) less what the pods bound
  to it already request (every pod not Succeeded or Failed; k8s/capacity.py `pod_requests`, the
  scheduler's count). Two cluster-wide reads, `list nodes` and `list pods`, with the runner's own
  credentials; a refusal or an unreachable API raises `KubeError`.
- `trial_peak(bundles)` is what one trial of these bundles needs on a node at most: per resource,
  the largest over the bundles of its chart's pods plus a rolling restart's extra pod
  (`TrialRequests.peak`). The runner scales the chart's load generator to 0 and adds its harness
  pod, whose requests are those of the chart's harness workloads it stands in for (harness_pod.py),
  so the chart's count stands.
- `cluster_slots(room, peak)` is the sum over the nodes of `trials_per_node` (a node's trials are
  placed whole: the runner admits a whole trial or none).
- `jobs_warning(jobs, slots, nodes, peak)`: the one line to print when `jobs` exceeds the slots,
  else None. A trial beyond the slots waits with Pending pods until its install bound makes it an
  infra_error, which is why it is said before anything starts; it never refuses (the room changes
  as other work on the cluster comes and goes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenac.k8s.capacity import CapacityError, Resources, bundle_requests, parse_quantity, pod_requests, trials_per_node
from arenac.runner.kube.api import KubeError, describe, k8s

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

_ENDED = ("Succeeded", "Failed")  # a pod in these phases holds nothing on its node
_KEEPS_OFF = ("NoSchedule", "NoExecute")
_REQUEST_TIMEOUT_S = 30


@dataclass(frozen=True)
class NodeRoom:
    name: str
    allocatable: Resources
    requested: Resources  # by the pods bound to it now

    @property
    def free(self) -> Resources:
        return self.allocatable - self.requested


def node_room(api: ApiClient) -> list[NodeRoom]:
    core = k8s().CoreV1Api(api)
    as_json: Callable[[Any], Any] = api.sanitize_for_serialization  # the objects as the API server sent them
    try:
        nodes = as_json(core.list_node(_request_timeout=_REQUEST_TIMEOUT_S))["items"]
        pods = as_json(core.list_pod_for_all_namespaces(_request_timeout=_REQUEST_TIMEOUT_S))["items"]
    except Exception as error:  # the client's ApiException, or the connection's: said in one line
        raise KubeError(f"cannot list the cluster's nodes and pods: {describe(error)}") from error
    requested: dict[str, Resources] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in _ENDED:
            requested[node] = requested.get(node, Resources()) + pod_requests(pod["spec"])
    return [NodeRoom(node["metadata"]["name"], _allocatable(node), requested.get(node["metadata"]["name"], Resources()))
            for node in nodes if _takes_pods(node)]


def trial_peak(bundles: Sequence[Path]) -> Resources:
    peak = Resources()
    for bundle in bundles:
        peak = peak.most(bundle_requests(bundle).peak)
    return peak


def cluster_slots(room: Sequence[NodeRoom], peak: Resources) -> int:
    return sum(trials_per_node(node.free, peak) for node in room)


def jobs_warning(jobs: int, slots: int, nodes: int, peak: Resources) -> str | None:
    if jobs <= slots:
        return None
    held = f"holds {slots} trial{'s' if slots != 1 else ''}" if slots else "holds no trial"
    return (f"arenac: warning: --jobs {jobs}, but the cluster ({nodes} schedulable node{'s' if nodes != 1 else ''}) "
            f"{held} side by side now (a trial requests up to {peak.describe()}): the trials beyond wait "
            "with Pending pods and end as infra_error past their install bound")


def _takes_pods(node: dict[str, Any]) -> bool:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    if spec.get("unschedulable"):
        return False
    if any(taint.get("effect") in _KEEPS_OFF for taint in spec.get("taints") or ()):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _allocatable(node: dict[str, Any]) -> Resources:
    given = (node.get("status") or {}).get("allocatable") or {}
    try:  # int() rounds down: allocatable is what the kubelet offers, never more
        return Resources(cpu_m=int(parse_quantity(given.get("cpu", 0)) * 1000),
                         memory_b=int(parse_quantity(given.get("memory", 0))),
                         ephemeral_b=int(parse_quantity(given.get("ephemeral-storage", 0))),
                         pods=int(parse_quantity(given.get("pods", 0))))
    except CapacityError as error:
        raise KubeError(f"node {node['metadata']['name']}: allocatable {given}: {error}") from error
