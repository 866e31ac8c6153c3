"""The `kubernetes` backend of `arenac harness episode --target-namespace NS` (backend.py's protocol):
the episode runs in the harness pod (harness_pod.py) against the substrate a chart installed in the
application namespace NS; the agent is external (external_agent.py) and holds a real kubectl.

Contract of `ClusterBackend(bundle, scratch, state, time_scale, sandbox, ..., token, listen, board,
target)`, `target` a `ClusterTarget` (the namespace, the credentials' directory, how to reach the
API, the bounds):

- `provision(healthy)`: the harness's hands (`HarnessIO`) from the driver's `cluster_endpoints`
  (the Services by DNS name in NS, the credentials read from the mounted directory, one file per
  key), once `wait_substrate` saw every component's pod Ready and every Service's TCP port
  accepting, within `ready_timeout_s` (at most 300 s); past it `SubstrateNotReady` (a `KubeError`)
  names what is not ready. The faults' chart part is the install's: for the healthy control
  (`healthy`) the runner installed the chart without the faults' overlay (install.py
  `RunnerValues.healthy`), so here it changes nothing; the episode injects no fault.
- `pids()` is {}: no substrate process runs in this pod.
- `start_load` runs the local backend's load generator (local_load.py) in this pod, against the
  gateway's Service; its process is recorded in the state directory as the local backend's is.
- `watch` is `pod_watch.PodWatch`: the pods listed every second, the load generator's process.
- `open_doors` is the broker without the brokered kubectl (access.py `start_without_kubectl`),
  on TCP at `listen` with `token`; `start_agent` is external_agent.py's `hand_over`, and opens the
  watch's agent window until the freeze.
- `restart(service)` is `workloads.restart_workload` with this pod's ServiceAccount (its Role lets
  it patch only the plan's restart targets), the workload's kind read from its pods' owners; the
  watch ignores the replacement.
- `snapshot` is snapshot.py's, the ConfigMaps read through the API by name
  (`<substrate>-<component>-config`), the agent's restarts the watch's once the doors are open.
- `stop_agent_side` closes the broker and stops the load; `stop_substrate` closes the hands and
  the API client: the substrate itself is the runner's to uninstall.

Every API call the backend makes is one the harness pod's Role grants (harness_pod.py
`role_rules`): list pods, get the snapshot's ConfigMaps by name, patch and get the restart targets
by name. `in_cluster_api(kubeconfig)` is the client: the kubeconfig when one is given (or
`$KUBECONFIG` is set), else the pod's in-cluster ServiceAccount.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from arenac.model.evidence import Snapshot
from arenac.runner.access import AgentAccess
from arenac.runner.agents import AgentSpec
from arenac.runner.bundle import RunnableBundle
from arenac.runner.clock import EpisodeClock
from arenac.runner.external_agent import ExternalAgent, StatusBoard, hand_over
from arenac.runner.harness_commands import HarnessInputError, read_credentials
from arenac.runner.harness_io import HarnessIO
from arenac.runner.kube.api import KubeError, connect, describe, k8s
from arenac.runner.kube.pod_watch import PodWatch, app_pods, not_ready_lines, workload_name
from arenac.runner.kube.workloads import restart_workload
from arenac.runner.local_load import LoadgenProcess, start_loadgen
from arenac.runner.records import EventLog
from arenac.runner.snapshot import configmap_components, take_snapshot
from arenac.runner.state import StateDir
from arenac.sandbox import SandboxChoice
from arenac.substrate.interface import Endpoints, EndpointsError, SubstrateDriver
from arenac.substrate.registry import driver_for

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

T = TypeVar("T")
MAX_READY_S = 300.0
REQUEST_TIMEOUT_S = 10.0
PORT_TIMEOUT_S = 2.0


class SubstrateNotReady(KubeError):
    """The substrate's pods or Services were not all ready within the bound."""


@dataclass(frozen=True)
class ClusterTarget:
    namespace: str  # the application namespace: where the chart installed the substrate
    credentials: Path  # the substrate's Secrets' keys, mounted as files (harness_pod.py CREDENTIALS_DIR)
    connect: Callable[[], ApiClient]  # the API client (`in_cluster_api`)
    ready_timeout_s: float = MAX_READY_S
    restart_timeout_s: float = 300.0
    poll_s: float = 1.0


def in_cluster_api(kubeconfig: Path | None = None) -> ApiClient:
    """A kubeconfig when given or in `$KUBECONFIG`, else this pod's ServiceAccount (its token and CA
    mounted at the standard path): `KubeError` when neither can be had."""
    if kubeconfig is None and os.environ.get("KUBECONFIG"):
        # named here: the client reads $KUBECONFIG once, when it is first imported
        kubeconfig = Path(os.environ["KUBECONFIG"])
    if kubeconfig is not None:
        return connect(kubeconfig)  # a file that is not a kubeconfig: KubeError naming the file and why
    # imported here: the client's import is heavy (api.py's k8s())
    import kubernetes.config

    configuration = k8s().Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException as error:
        raise KubeError(f"not in a pod with a ServiceAccount token, and no kubeconfig: {error}") from error
    client: ApiClient = k8s().ApiClient(configuration)
    return client


def port_targets(endpoints: Endpoints) -> list[tuple[str, str, int]]:
    """(component, host, port) of every Service the harness and the load reach."""
    urls = [*sorted(endpoints.services.items()), ("postgres", endpoints.postgres_dsn), ("redis", endpoints.redis)]
    targets = []
    for component, url in urls:
        parts = urlsplit(url)
        targets.append((component, parts.hostname or "", int(parts.port or 0)))
    return targets


def wait_substrate(api: ApiClient, namespace: str, substrate: SubstrateDriver, endpoints: Endpoints,
                   timeout_s: float = MAX_READY_S, poll_s: float = 1.0) -> float:
    """Wait until every component has a Ready pod and every Service's port accepts a connection;
    returns the seconds waited. Past `timeout_s` (at most `MAX_READY_S`), `SubstrateNotReady`."""
    bound = min(timeout_s, MAX_READY_S)
    started = time.monotonic()
    deadline = started + bound
    while True:
        left = max(0.0, deadline - time.monotonic())
        problems = not_ready_lines(app_pods(api, namespace, substrate, max(1.0, min(REQUEST_TIMEOUT_S, left))),
                                   substrate)
        if not problems:  # the pods first: a Service of a pod not ready has no endpoint to accept
            problems = [why for target in port_targets(endpoints) if (why := _refused(*target, left))]
        if not problems:
            return round(time.monotonic() - started, 3)
        if time.monotonic() >= deadline:
            raise SubstrateNotReady(f"the substrate in {namespace} is not ready within {bound:g} s: "
                                    + "; ".join(problems))
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def _refused(component: str, host: str, port: int, left: float) -> str:
    try:
        with socket.create_connection((host, port), timeout=max(0.2, min(PORT_TIMEOUT_S, left))):
            return ""
    except OSError as error:
        return f"{component} at {host}:{port} does not accept connections ({error.strerror or error})"


class ClusterBackend:
    """One episode's machinery in the harness pod (see the module's docstring)."""

    name = "kubernetes"

    def __init__(self, bundle: RunnableBundle, scratch: Path, state: StateDir, time_scale: float,
                 sandbox: SandboxChoice, agent_ro: tuple[Path, ...] = (), agent_network: str = "private", *,
                 token: str, listen: tuple[str, int], board: StatusBoard, target: ClusterTarget) -> None:
        # the sandbox and the agent's mounts and network are a local agent's: the agent here is external
        self.bundle, self.scratch, self.state, self.time_scale = bundle, scratch, state, time_scale
        self.token, self.listen, self.board, self.target = token, listen, board, target
        self.substrate = driver_for(bundle.plan.substrate)
        self.api: ApiClient | None = None
        self.io: HarnessIO | None = None
        self.load: LoadgenProcess | None = None
        self.pod_watch: PodWatch | None = None
        self.doors: AgentAccess | None = None

    def provision(self, healthy: bool) -> HarnessIO:
        # `healthy` is the install's (the runner left the faults' overlay out): nothing to leave out here
        try:
            endpoints = self.substrate.cluster_endpoints(self.target.namespace,
                                                         read_credentials(self.target.credentials))
        except (HarnessInputError, EndpointsError) as error:
            raise KubeError(f"the substrate's credentials ({self.target.credentials}): {error}") from error
        self.api = self.target.connect()
        wait_substrate(self.api, self.target.namespace, self.substrate, endpoints, self.target.ready_timeout_s,
                       self.target.poll_s)
        self.io = HarnessIO(endpoints, self.substrate)
        return self.io

    def pids(self) -> dict[str, int]:
        return {}

    def start_load(self, evidence: Path, live_file: Path) -> LoadgenProcess:
        self.load = start_loadgen(self.bundle.plan, self._io().endpoints.gateway, self.time_scale,
                                  evidence / "ledger.json", self.scratch, live_file=live_file)
        self.state.record_pids(self.scratch, {"loadgen": self.load.pid})
        return self.load

    def watch(self, clock: EpisodeClock, on_loss: Callable[[], None]) -> PodWatch:
        self.pod_watch = PodWatch(self._api(), self.target.namespace, self.substrate, self.load, clock,
                                  on_loss=on_loss).start()
        return self.pod_watch

    def open_doors(self, log: EventLog, on_declare: Callable[[], None]) -> AgentAccess:
        self.doors = AgentAccess.start_without_kubectl(self.bundle, self._io().endpoints, self.substrate, self.scratch,
                                                       log, on_declare, token=self.token, listen=self.listen)
        return self.doors

    def start_agent(self, spec: AgentSpec, log_path: Path) -> ExternalAgent:
        watch = self.pod_watch
        if watch is not None:  # from here to the freeze a pod replaced is the agent's restart
            watch.open_window()
        return hand_over(self.doors, spec, log_path, self.board,
                         on_frozen=watch.close_window if watch is not None else None)

    def restart(self, service: str) -> None:
        api, namespace = self._api(), self.target.namespace
        workload = workload_name(self.substrate, service)
        kinds = {pod.kind for pod in app_pods(api, namespace, self.substrate) if pod.workload == workload}
        if len(kinds) != 1:
            found = "no pod" if not kinds else f"pods owned by a {' and a '.join(sorted(kinds))}"
            raise KubeError(f"cannot restart {namespace}/{workload}: {found} (its kind is read from its pods' owners)")
        (kind,) = kinds
        on_purpose = self.pod_watch.restarting(service) if self.pod_watch is not None else nullcontext()
        with on_purpose:
            restart_workload(api, namespace, workload, self.target.restart_timeout_s, self.target.poll_s, kind=kind)

    def snapshot(self, t: float, baseline_ids: dict[str, int] | None, configmaps: bool = True) -> Snapshot:
        restarts = self.pod_watch.agent_restarts() if self.doors is not None and self.pod_watch is not None else None
        return take_snapshot(self._io(), self.bundle.plan, t, baseline_ids, agent_restarts=restarts,
                             configmap_data=self.configmaps() if configmaps else None)

    def configmaps(self) -> dict[str, dict[str, str]]:
        """component -> its ConfigMap's data, each read by name (the Role names them; no list)."""
        core = k8s().CoreV1Api(self._api())
        found = {}
        for component in configmap_components(self.substrate):
            name = f"{workload_name(self.substrate, component)}-config"
            try:
                body = core.read_namespaced_config_map(name, self.target.namespace, _request_timeout=REQUEST_TIMEOUT_S)
            except Exception as error:
                raise KubeError(f"cannot read ConfigMap {self.target.namespace}/{name}: {describe(error)}") from error
            found[component] = dict(body.data or {})
        return found

    def stop_agent_side(self) -> None:
        for part in (self.doors, self.load):  # the broker first: no call of the agent outlives the load
            if part is not None:
                part.stop()

    def stop_substrate(self) -> None:
        if self.pod_watch is not None:  # the episode stopped it before; a second stop is a no-op
            self.pod_watch.stop()
        if self.io is not None:
            self.io.close()
        if self.api is not None:
            self.api.close()  # type: ignore[no-untyped-call]  # the client's close is unannotated
            self.api = None

    # ---- helpers --------------------------------------------------------------------------------
    def _io(self) -> HarnessIO:
        return _provisioned(self.io)

    def _api(self) -> ApiClient:
        return _provisioned(self.api)


def _provisioned(part: T | None) -> T:
    """What `provision` makes: asked for before it, a harness bug."""
    if part is None:
        raise RuntimeError("the substrate is not provisioned (provision first)")
    return part
