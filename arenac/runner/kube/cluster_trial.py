"""One trial on a cluster, the runner's side (`arenac run --backend kubernetes`; docs/kubernetes.md,
"The runner's side of a trial"): the pieces of this package composed around the harness pod, which
runs the episode's whole plan (`arenac harness episode`) beside the substrate.

Contract: `run_cluster_trial(bundle, options, stop, seams, bounds)` returns the trial's
`EpisodeResult` and leaves `options.out` a run directory as the local backend's (docs/evidence.md:
run.json, events.jsonl, actions.jsonl, agent.log, evidence/, verdict.json, reward.json) plus
`cluster.json` (`ClusterRun`: the trial id, context, namespaces, pod, what was revoked, each step's
time and whether teardown succeeded; no token, no credential, no absolute path). Marked INCOMPLETE
until the verdict is written (records.begin_run / finish_run). In order:

 1. connect (`options.cluster`: kubeconfig and context) and register the trial's record
    (records.py: before any namespace exists, so an interrupted run's namespaces are a leftover the
    next runner's cleanup removes);
 2. create both namespaces labelled with the trial id (namespaces.py);
 3. install the chart with only the runner's values (install.py: the time scale, and the chart's
    fault-init Job off, as the episode fires its onsets itself) and wait for it, bounded; then the
    chart's own load generator scaled to 0 (the episode runs the load; two would double it);
 4. apply the agent's RBAC (agent_access.py) and create the harness pod's objects (harness_pod.py:
    the substrate's credentials copied, a fresh broker token);
 5. wait for the pod's readiness, which is the handover (its probe is `harness status
    --handed-over`), bounded; an episode that ends before its handover (void) is read from
    `harness status` by exec and goes straight to 8;
 6. at the handover, not before: the agent's token (TokenRequest, lifetime the agent's window plus
    a margin) and its kubeconfig in its working directory, and its route to the broker (a unix
    socket relayed to the pod's broker port: streams.py); the agent (`AgentSpec`, as `arenac run
    --agent` gives) runs in this machine's sandbox as the local backend runs it (agents.py), its
    output in agent.log;
 7. the agent's window ends when the agent exits, the pod's episode leaves `handed_over` (a
    declaration, its window run out), the stop event, or the bound: the agent is frozen, its
    access revoked (RoleBindings, then its ServiceAccount: every token of it dies) and the relay
    closed;
 8. `arenac harness finish` in the pod by exec, then the graded run fetched (streams.archive_argv)
    into the run directory;
 9. both namespaces torn down (install.uninstall, bounded), then the record removed;
10. the run graded here with the bundle's pinned gates (harness_adapters.grade, as every local
    run): the pod's verdict must agree.

Every `KubeError` (an API error, a timeout, a refused command in the pod) at any step ends the trial
as infra_error naming the step, after the same teardown; a teardown that fails is infra_error too,
and the record stays (the next runner's cleanup retries it). Ctrl-C (`stop`) ends it as infra_error
"interrupted", torn down. `ClusterSeams` is where the tests put the fake API's connection, a fake of
the pod's commands and a loopback route; every default is the real one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar

import yaml

from arenac.broker.clients import write_tool_clients
from arenac.broker.server import client_interpreter
from arenac.k8s.capacity import HUNG_REQUEST_VISIBLE_S, TrialPhases, TrialTiming, duration_bound
from arenac.model.base import Model
from arenac.model.harness_status import HarnessStatus
from arenac.model.plan import brokered_tools
from arenac.model.run import RunRecord
from arenac.model.verdict import Verdict
from arenac.runner import harness_adapters as adapters
from arenac.runner.agents import AgentLaunch, AgentSpec, claim_agent_account, start_agent
from arenac.runner.bundle import RunnableBundle
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube.agent_access import (
    apply_agent_rbac,
    request_agent_token,
    revoke_agent_access,
    token_seconds,
    write_agent_kubeconfig,
)
from arenac.runner.kube.api import KubeError, connect, describe, k8s, server_of
from arenac.runner.kube.install import (
    Installer,
    InstallPlan,
    RunnerValues,
    create_rendered,
    has_loadgen_switch,
    install_chart,
    uninstall,
)
from arenac.runner.kube.names import TrialNamespaces, trial_namespaces
from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.records import TrialRecords
from arenac.runner.kube.streams import (
    BrokerRoutes,
    KubePodExec,
    PodExec,
    PortForwardRoutes,
    UnixRelay,
    archive_argv,
    unpack_archive,
)
from arenac.runner.kube.workloads import wait_ready
from arenac.runner.options import ClusterTarget, EpisodeOptions, EpisodeResult
from arenac.runner.records import begin_run, finish_run, record_infra_error, write_model
from arenac.runner.state import StateDir
from arenac.sandbox import AGENT_HOME, AGENT_RUN, probe
from arenac.substrate.registry import driver_for

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

T = TypeVar("T")
CLUSTER_RECORD = "cluster.json"
COLLECT_DIR = f"{hp.STATE_DIR}/collected"  # where `harness finish` copies the graded run, in the pod
FETCHED = ("events.jsonl", "actions.jsonl", "evidence")  # what of the pod's run becomes the run directory's
KUBECONFIG_NAME = "kubeconfig"  # in the agent's working directory (its sandbox's home)
INTERRUPTED = "interrupted"  # the worker's reason too: a resumed qualification or campaign runs it again


class TrialStepFailed(KubeError):
    """A step of the trial failed: its message is the step's name, then why (a `KubeError`'s message,
    or an API error's description); the trial is an infra_error."""


class Interrupted(Exception):
    """The runner's stop (Ctrl-C, SIGTERM) ended the trial."""


@dataclass(frozen=True)
class ClusterBounds:
    """Every wait of a trial, in real seconds. The plan's phases (at the time scale) plus margins for
    what the plan does not time: the in-pod episode's own start, its soak and grading, the API's
    answers. Bounds, not measurements: issue 13 item 5 measures them."""

    install_s: float = 600.0  # the chart created and ready
    objects_s: float = 60.0  # the harness pod's objects created
    start_margin_s: float = 300.0  # the pod scheduled, its image pulled, the episode at its warm-up
    agent_margin_s: float = 60.0  # past the agent's window: the pod closes it; this bounds the runner
    finish_margin_s: float = 300.0  # the soak, challenges and grade beyond the plan's bound
    exec_s: float = 120.0  # one command in the pod (status, the fetch)
    teardown_s: float = 300.0
    poll_s: float = 2.0  # the pod's readiness, the agent
    status_every_s: float = 10.0  # `harness status` by exec, while waiting (an exec costs a websocket)
    manifest_floor_s: float = HUNG_REQUEST_VISIBLE_S  # a hung request shows only at the client's timeout

    def handover_s(self, phases: TrialPhases, scale: float) -> float:
        manifest = max(phases.manifest_within_s * scale, self.manifest_floor_s) if phases.manifest_within_s else 0.0
        return self.start_margin_s + (phases.warmup_s + phases.onset_s) * scale + manifest

    def agent_s(self, phases: TrialPhases, scale: float) -> float:
        return phases.agent_window_s * scale + self.agent_margin_s

    def finish_s(self, phases: TrialPhases, scale: float) -> float:
        # the whole plan at its bound, less nothing: generous, as the finish waits at most for the rest
        return duration_bound(phases, TrialTiming(time_scale=scale, provision_s=0.0, teardown_s=0.0)) \
            + self.finish_margin_s


def new_trial_id(bundle: RunnableBundle) -> str:
    """The variant (readable in `kubectl get ns`) and 8 random hex digits: two runs of one variant,
    on one machine or two sharing a cluster, never take the same namespaces."""
    head = bundle.plan.variant.lower()[:40].strip("-._") or "trial"
    return f"{head}-{secrets.token_hex(4)}"


def _connect(target: ClusterTarget) -> ApiClient:
    return connect(target.kubeconfig, target.context)


@dataclass(frozen=True)
class ClusterSeams:
    connect: Callable[[ClusterTarget], ApiClient] = _connect
    pod_exec: Callable[[ApiClient, str, str, str], PodExec] = KubePodExec
    routes: Callable[[ApiClient, str, str, int], BrokerRoutes] = PortForwardRoutes
    installer: Installer = create_rendered
    records: Callable[[], TrialRecords] = TrialRecords.default
    trial_id: Callable[[RunnableBundle], str] = new_trial_id
    # the agent's user and the lock that holds it (agents.py: never shared by two live episodes, as the
    # freeze sweeps every process of the user)
    agent_account: Callable[[Path], tuple[tuple[int, int] | None, IO[Any] | None]] = claim_agent_account


class StepRecord(Model):
    step: str
    ok: bool
    seconds: float


class RevocationRecord(Model):
    role_bindings: tuple[str, ...]
    service_account_deleted: bool


class FreezeSummary(Model):
    """The agent's freeze on this machine (agents.py's FreezeRecord): the pod's boundary.json says only
    that its broker closed, as the agent is not its process."""

    method: str
    processes_stopped: int
    remaining: int


class PodVerdict(Model):
    status: str
    reward: int


class ClusterRun(Model):
    """cluster.json: where and how the trial ran on the cluster (no secret, no absolute path)."""

    backend: Literal["kubernetes"] = "kubernetes"
    trial: str
    context: str | None
    application_namespace: str
    harness_namespace: str
    pod: str = hp.NAME
    container: str = hp.CONTAINER
    broker_service: str = hp.SERVICE
    broker_port: int = hp.DEFAULT_PORT
    image: str | None = None
    chart_load_generators_scaled_to_zero: tuple[str, ...] = ()  # the episode runs the load itself
    handed_over: bool = False
    agent_token_seconds: int | None = None  # the lifetime asked for (the token itself is never written)
    freeze: FreezeSummary | None = None
    revoked: RevocationRecord | None = None
    pod_verdict: PodVerdict | None = None
    teardown: Literal["done", "failed", "none"] = "none"  # none: nothing was created (no connection, no record)
    record_kept: bool = False  # True: the teardown failed, the next runner's cleanup retries it
    error: str | None = None
    steps: tuple[StepRecord, ...] = ()


@dataclass
class _Trial:
    bundle: RunnableBundle
    options: EpisodeOptions
    stop: threading.Event
    seams: ClusterSeams
    bounds: ClusterBounds
    names: TrialNamespaces
    record: ClusterRun
    api: ApiClient | None = None
    steps: list[StepRecord] = field(default_factory=list)
    broker_token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    @property
    def phases(self) -> TrialPhases:
        return TrialPhases.from_plan(self.bundle.plan)

    @property
    def scale(self) -> float:
        return self.options.time_scale

    def step(self, name: str, action: Callable[[], T]) -> T:
        """Run one step, timed; a KubeError or an API error is the trial's failure, named by its step."""
        started, ok = time.monotonic(), False
        try:
            result = action()
            ok = True
        except Interrupted:
            raise
        except KubeError as error:  # said with its step: which part of the trial the cluster failed
            raise TrialStepFailed(f"{name}: {error}") from error
        except Exception as error:  # the client's own (ApiException, a broken connection), a sandbox that failed
            raise TrialStepFailed(f"{name}: {describe(error)}") from error
        finally:
            self.steps.append(StepRecord(step=name, ok=ok, seconds=round(time.monotonic() - started, 3)))
        return result

    def api_client(self) -> ApiClient:
        assert self.api is not None
        return self.api

    def pod(self) -> PodExec:
        return self.seams.pod_exec(self.api_client(), self.names.harness, hp.NAME, hp.CONTAINER)


def run_cluster_trial(bundle: RunnableBundle, options: EpisodeOptions, stop: threading.Event | None = None,
                      seams: ClusterSeams | None = None, bounds: ClusterBounds | None = None) -> EpisodeResult:
    started = time.monotonic()
    seams, bounds, stop = seams or ClusterSeams(), bounds or ClusterBounds(), stop or threading.Event()
    target = options.cluster or ClusterTarget()
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)  # as the local trial: the agent's user cannot read the run directory
    run_record = begin_run(out, bundle, options)
    (out / "evidence").mkdir(exist_ok=True)
    trial_id = seams.trial_id(bundle)
    names = trial_namespaces(trial_id)
    trial = _Trial(bundle, options, stop, seams, bounds, names,
                   ClusterRun(trial=trial_id, context=target.context, application_namespace=names.application,
                              harness_namespace=names.harness))
    records = seams.records()
    error: str | None = None
    registered = False
    try:
        trial.api = trial.step("connect", lambda: seams.connect(target))
        trial.step("register", lambda: records.register(trial_id, server_of(trial.api_client()), target.context,
                                                        (names.application, names.harness)))
        registered = True
        _drive(trial, records.owner())
    except Interrupted:
        error = INTERRUPTED
    except KubeError as failure:
        error = str(failure)
    finally:
        if registered:
            _teardown(trial, records)
    if error is None and trial.record.teardown == "failed":
        error = trial.record.error
    return _conclude(trial, run_record, error, started)


def _drive(trial: _Trial, owner: str) -> None:
    api, names, bundle, bounds = trial.api_client(), trial.names, trial.bundle, trial.bounds
    chart = bundle.directory / "chart"
    trial.step("namespaces", lambda: create_trial_namespaces(api, names.trial, owner))
    installed = trial.step("install", lambda: install_chart(
        api, chart, names.application, names.harness,
        RunnerValues(time_scale=trial.scale, fault_init=False, healthy=not trial.options.inject_faults,
                     loadgen=False if has_loadgen_switch(chart) else None),
        timeout_s=bounds.install_s, poll_s=bounds.poll_s, plan_json=bundle.pinned["plan.json"],
        installer=trial.seams.installer))
    quieted = trial.step("chart load off", lambda: _quiet_chart_load(trial, installed.plan))
    trial.record = trial.record.model_copy(update={"chart_load_generators_scaled_to_zero": quieted})
    rbac = trial.step("agent rbac", lambda: apply_agent_rbac(api, bundle.rbac_bytes, names.application))
    image = _chart_harness_image(chart)
    trial.record = trial.record.model_copy(update={"image": image})
    _check_stop(trial)

    def objects() -> hp.HarnessPodObjects:
        credentials = hp.read_substrate_credentials(api, names.application,
                                                    driver_for(bundle.plan.substrate).cluster_credentials)
        spec = hp.HarnessPodSpec(bundle=bundle, names=names, install=installed.plan,
                                 image=image, time_scale=trial.scale, credentials=credentials,
                                 api_server=hp.api_server_endpoints(api), broker_token=trial.broker_token,
                                 deadline_s=_pod_deadline_s(trial), healthy=not trial.options.inject_faults)
        made = hp.harness_pod_objects(spec)
        hp.create_harness_pod(api, made, timeout_s=bounds.objects_s)
        return made

    trial.step("harness pod", objects)
    ended_early = trial.step("handover", lambda: _wait_handover(trial))
    if ended_early is None:  # handed over: the agent's phase
        trial.record = trial.record.model_copy(update={"handed_over": True})
        trial.step("agent", lambda: _agent_phase(trial, rbac.service_account))
    finish_s = bounds.finish_s(trial.phases, trial.scale)
    trial.step("finish", lambda: _finish(trial, finish_s))
    trial.step("fetch", lambda: _fetch(trial))


def _quiet_chart_load(trial: _Trial, plan: InstallPlan) -> tuple[str, ...]:
    """The chart's own load generator (a Deployment of the harness namespace running `harness
    loadgen`) scaled to 0 and waited for: the pod's episode runs the plan's load itself, and two
    generators would double it. A chart with the switch `harness.loadgen.enabled` is installed with
    it off and has no such Deployment (nothing to do here); this is for a bundle compiled before it."""
    names = tuple(o.name for o in plan.objects if o.kind == "Deployment" and o.namespace == plan.harness
                  and any(list(c.get("args") or [])[:2] == ["harness", "loadgen"]
                          for c in o.body["spec"]["template"]["spec"]["containers"]))
    apps = k8s().AppsV1Api(trial.api_client())
    for name in names:
        apps.patch_namespaced_deployment(name, plan.harness, {"spec": {"replicas": 0}},
                                         _request_timeout=trial.bounds.exec_s)
    if names:
        wait_ready(trial.api_client(), (plan.harness,), timeout_s=trial.bounds.objects_s, poll_s=trial.bounds.poll_s)
    return names


def _check_stop(trial: _Trial) -> None:
    if trial.stop.is_set():
        raise Interrupted


def _pod_deadline_s(trial: _Trial) -> int:
    """The pod's activeDeadlineSeconds: every phase's bound, so that a runner gone for good leaves no
    episode running past its trial's end (the namespaces then wait for the cleanup)."""
    phases, bounds = trial.phases, trial.bounds
    return int(bounds.handover_s(phases, trial.scale) + bounds.agent_s(phases, trial.scale)
               + bounds.finish_s(phases, trial.scale) + bounds.teardown_s)


def _chart_harness_image(chart: Path) -> str:
    """The harness image the chart names (`harness.image`): the pod runs the same arenac as its Jobs."""
    try:
        values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8")) or {}
        image = values["harness"]["image"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as error:
        raise KubeError(f"the chart names no harness.image ({type(error).__name__})") from error
    if not isinstance(image, str) or not image:
        raise KubeError("the chart's harness.image is not an image name")
    return image


# ---- the handover -----------------------------------------------------------------------------------
def _harness_status(trial: _Trial) -> HarnessStatus | None:
    """`arenac harness status` in the pod: its status.json, None while it has none."""
    result = trial.pod().run(["arenac", "harness", "status", "--run-dir", hp.RUN_DIR], trial.bounds.exec_s)
    if result.code != 0:
        return None
    try:
        return HarnessStatus.model_validate_json(result.stdout)
    except ValueError as error:
        raise KubeError(f"`arenac harness status` in the pod printed no status: {error}") from error


def _wait_handover(trial: _Trial) -> HarnessStatus | None:
    """None once the pod is Ready (handed over); the pod's status when its episode ended before."""
    core = k8s().CoreV1Api(trial.api_client())
    bound = trial.bounds.handover_s(trial.phases, trial.scale)
    deadline = time.monotonic() + bound
    next_status = time.monotonic() + trial.bounds.status_every_s
    episode = ""  # what the pod's episode last said of itself (`harness status`)
    while True:
        _check_stop(trial)
        pod = core.read_namespaced_pod(hp.NAME, trial.names.harness, _request_timeout=trial.bounds.exec_s)
        status = pod.status
        phase = (status.phase if status is not None else None) or "Pending"
        conditions = (status.conditions if status is not None else None) or []
        if any(c.type == "Ready" and c.status == "True" for c in conditions):
            return None
        if phase in ("Failed", "Succeeded"):
            raise KubeError(f"the harness pod ended ({phase}) before the handover{_why_pod(pod)}")
        now = time.monotonic()
        if phase == "Running" and now >= next_status:
            next_status = now + trial.bounds.status_every_s
            current = _harness_status(trial)
            if current is not None:
                episode = f", episode {current.phase}"
                if current.phase in ("graded", "ended"):  # void, or it could not run: finish says which
                    return current
        if now >= deadline:
            raise KubeError(f"the harness pod was not handed over within {bound:g} s "
                                  f"(phase {phase}{_why_pod(pod)}{episode})")
        time.sleep(min(trial.bounds.poll_s, max(0.0, deadline - now)))


def _why_pod(pod: object) -> str:
    statuses = getattr(getattr(pod, "status", None), "container_statuses", None) or []
    for container in statuses:
        state = container.state
        waiting = getattr(state, "waiting", None) if state is not None else None
        terminated = getattr(state, "terminated", None) if state is not None else None
        if waiting is not None and waiting.reason:
            return f": {container.name} waiting ({waiting.reason})"
        if terminated is not None:
            return f": {container.name} terminated ({terminated.reason or 'exit'} {terminated.exit_code})"
    return ""


# ---- the agent's phase ------------------------------------------------------------------------------
def _agent_phase(trial: _Trial, service_account: str) -> None:
    api, bundle, options = trial.api_client(), trial.bundle, trial.options
    sandbox = probe(options.isolation.sandbox)
    sandboxed = sandbox.mechanism == "bwrap"
    scratch = Path(tempfile.mkdtemp(prefix="arenac-cluster-agent-"))
    os.chmod(scratch, 0o711)  # the agent's user passes through to its tools and workdir, never lists
    state = StateDir.default().register(scratch)
    relay: UnixRelay | None = None
    account_lock = None
    try:
        agent_dir = scratch / "agent"
        broker_dir = agent_dir / "run"
        workdir = agent_dir / "work"
        broker_dir.mkdir(parents=True, mode=0o711)
        workdir.mkdir(parents=True)
        # the agent's credentials exist from here on, not before: its token is issued at the handover
        granted = request_agent_token(api, trial.names.application, service_account,
                                      token_seconds(bundle.plan.timeline.agent_window_s, trial.scale))
        trial.record = trial.record.model_copy(update={"agent_token_seconds": granted.expiration_seconds})
        write_agent_kubeconfig(api, granted, workdir / KUBECONFIG_NAME)
        routes = trial.seams.routes(api, trial.names.harness, hp.NAME, hp.DEFAULT_PORT)
        relay = UnixRelay.start(broker_dir / "broker.sock", routes)
        tools_dir = agent_dir / "tools"
        write_tool_clients(tools_dir, brokered_tools(bundle.plan),
                           f"unix:{AGENT_RUN}/broker.sock" if sandboxed else relay.address, trial.broker_token,
                           interpreter=client_interpreter(), time_scale=trial.scale)
        tools_dir.chmod(0o755)
        account, account_lock = trial.seams.agent_account(state.root)
        home = AGENT_HOME if sandboxed else str(workdir)
        launch = AgentLaunch(workdir=workdir, tools_dir=tools_dir, broker_dir=broker_dir,
                             instruction=bundle.instruction_bytes, oracle_script=bundle.solve_script_bytes,
                             log=options.out / "agent.log", account=account, sandbox=sandbox,
                             extra_env={"KUBECONFIG": f"{home}/{KUBECONFIG_NAME}"},
                             extra_ro=options.isolation.agent_ro, network=options.isolation.agent_network)
        agent = start_agent(AgentSpec.parse(options.agent, bundle.solve_script), launch)
        state.record_pids(scratch, {"agent": agent.process.pid})
        try:
            _await_window_end(trial, agent.running)
        finally:
            frozen = agent.freeze()
            trial.record = trial.record.model_copy(update={"freeze": FreezeSummary(
                method=frozen.method, processes_stopped=frozen.processes_stopped, remaining=len(frozen.remaining))})
            revoked = revoke_agent_access(api, trial.names.application, service_account)
            trial.record = trial.record.model_copy(update={"revoked": RevocationRecord(
                role_bindings=revoked.role_bindings, service_account_deleted=revoked.service_account_deleted)})
    finally:
        if relay is not None:
            relay.close()
        if account_lock is not None:
            account_lock.close()
        shutil.rmtree(scratch, ignore_errors=True)
        state.unregister(scratch)


def _await_window_end(trial: _Trial, running: Callable[[], bool]) -> None:
    """Until the agent exits, the pod's episode leaves `handed_over`, the stop, or the bound."""
    deadline = time.monotonic() + trial.bounds.agent_s(trial.phases, trial.scale)
    next_status = time.monotonic() + trial.bounds.status_every_s
    while running() and time.monotonic() < deadline:
        _check_stop(trial)
        if time.monotonic() >= next_status:
            next_status = time.monotonic() + trial.bounds.status_every_s
            current = _harness_status(trial)
            if current is not None and current.phase != "handed_over":
                return
        time.sleep(min(trial.bounds.poll_s, 0.2))


# ---- finish, fetch, teardown, verdict ---------------------------------------------------------------
def _finish(trial: _Trial, timeout_s: float) -> None:
    result = trial.pod().run(["arenac", "harness", "finish", "--run-dir", hp.RUN_DIR, "--out", COLLECT_DIR,
                              "--timeout", f"{timeout_s:g}"], timeout_s + trial.bounds.exec_s)
    if result.code != 0:
        raise KubeError(f"`arenac harness finish` in the pod failed (exit {result.code}): {result.line()}")


def _fetch(trial: _Trial) -> None:
    result = trial.pod().run(archive_argv(COLLECT_DIR), trial.bounds.exec_s)
    if result.code != 0:
        raise KubeError(f"cannot fetch the run from the pod (exit {result.code}): {result.line()}")
    staging = Path(tempfile.mkdtemp(prefix="arenac-cluster-fetch-"))
    try:
        unpack_archive(result.stdout, staging)
        out = trial.options.out
        for name in FETCHED:
            source, target = staging / name, out / name
            if not source.exists():
                continue
            if target.is_dir():
                shutil.rmtree(target)
            shutil.move(str(source), str(target))
        try:
            pod_verdict = Verdict.model_validate_json((staging / "verdict.json").read_bytes())
        except (OSError, ValueError) as error:
            raise KubeError(f"the run fetched from the pod has no readable verdict.json: {error}") from error
        trial.record = trial.record.model_copy(update={"pod_verdict": PodVerdict(
            status=pod_verdict.status, reward=pod_verdict.reward)})
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _teardown(trial: _Trial, records: TrialRecords) -> None:
    if trial.api is None:
        return
    try:
        trial.step("teardown", lambda: uninstall(trial.api_client(), trial.names.application, trial.names.harness,
                                                 timeout_s=trial.bounds.teardown_s, poll_s=trial.bounds.poll_s))
    except KubeError as error:
        trial.record = trial.record.model_copy(update={"teardown": "failed", "record_kept": True,
                                                       "error": str(error)})
        return
    records.unregister(trial.names.trial)
    trial.record = trial.record.model_copy(update={"teardown": "done", "record_kept": False})


def _conclude(trial: _Trial, run_record: RunRecord, error: str | None, started: float) -> EpisodeResult:
    out, bundle = trial.options.out, trial.bundle
    if error is None:
        verdict = adapters.grade(out, bundle)  # the pinned gates, here: the pod's verdict is checked, not trusted
        pod = trial.record.pod_verdict
        if pod is not None and (pod.status, pod.reward) != (verdict.status, verdict.reward):
            error = (f"the harness pod graded the run {pod.status} (reward {pod.reward}), the runner "
                     f"{verdict.status} (reward {verdict.reward})")
    if error is not None:
        record_infra_error(out, error, trial.options.time_scale)
        verdict = adapters.grade(out, bundle)
    trial.record = trial.record.model_copy(update={"error": error, "steps": tuple(trial.steps)})
    write_model(out / CLUSTER_RECORD, trial.record)
    result = EpisodeResult(out, verdict.status, verdict.reward, verdict.outcome, verdict.safe_repair,
                           round(time.monotonic() - started, 2), verdict.reason or "")
    finish_run(out, run_record, result.wall_s)
    return result
