"""The cluster backend of `arenac harness episode --target-namespace` (arenac/runner/kube/pod_backend.py)
and its watch of the pods (pod_watch.py), on a FAKE Kubernetes API (kmock's in-memory emulator,
tests/helpers/fake_kube.py: a fake, not a cluster; the pods are stored by the test as a kubelet
would report them). Real parts where they run here: TCP listeners for the Services' ports, psql for
db-sql, the broker, the golden `minimal` bundle, its chart's Role. Each check on both sides:

- readiness: every component's pod Ready and every port accepting passes; a pod not ready (named
  with what it waits on), a component without a pod, a port refusing, past the bound, are
  `SubstrateNotReady`, for the healthy control as for the faulted one (the install left the faults
  out: nothing differs here); the backend refuses credentials it cannot use;
- the watch: a pod replaced or restarted before the handover is a lost part blamed on the
  infrastructure; in the agent's window it is the agent's restart (counted, no loss) and makes a
  later loss the agent's; a restart on purpose (the challenge) and a pod of a Job are not losses;
  the backend's watch looks by itself (its thread), and an API that does not answer is a
  `KubeError` at a fresh look (the episode's checkpoint: an infra_error);
- the restart: a rollout restart of the workload's kind, read from its pods' owners (Deployment
  and StatefulSet), ignored by the watch; no pod, no restart;
- the ConfigMaps read by name into the snapshot's record (the same record as a local stack's
  files); a missing one named;
- the broker without kubectl (its tools; db-sql's host, port and password from the connection string) and the
  handover that opens and closes the watch's agent window;
- the whole episode (trial, plan, grade) on the backend: a substrate that never gets ready is an
  infra_error at provisioning, named and graded;
- every API call the backend made is one the harness pod's Role grants (decided by the broker's
  RBAC authorizer), and the checker denies calls the backend does not make.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from arenac.broker.rbac import ApiRequest, Authorizer, service_account_user
from arenac.model.plan import brokered_tools
from arenac.runner.access import AgentAccess
from arenac.runner.agents import EXTERNAL, AgentSpec
from arenac.runner.bundle import open_bundle
from arenac.runner.clock import EpisodeClock
from arenac.runner.external_agent import StatusBoard
from arenac.runner.external_control import Control
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube import pod_backend as pb
from arenac.runner.kube.api import KubeError
from arenac.runner.kube.install import install_plan
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.pod_watch import PodWatch, app_pods, parts
from arenac.runner.records import EventLog
from arenac.runner.snapshot import configmaps_of, take_snapshot
from arenac.runner.state import StateDir
from arenac.sandbox import probe
from arenac.substrate.registry import driver_for
from helpers.fake_kube import CONFIG_MAPS, DEPLOYMENTS, PODS, STATEFUL_SETS
from helpers.golden import complete_variant

NAMES = trial_namespaces("t1")
NS, HARNESS = NAMES.application, NAMES.harness
SPINE = driver_for("spine")
HARNESS_USER = service_account_user(HARNESS, hp.NAME)
PASSWORDS = ("postgres-password", "spine-admin-password", "spine-app-password", "spine-operator-password",
             "spine-readonly-password")


@pytest.fixture(scope="module")
def bundle():
    return open_bundle(complete_variant("minimal"))


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    """The substrate's Secrets' keys as the harness pod mounts them (one file per key)."""
    directory = tmp_path / "credentials"
    directory.mkdir()
    for key in PASSWORDS:
        (directory / key).write_text(f"{key}-value")
    (directory / "users.acl").write_text("".join(f"user {u} on >{u}-pw ~* +@all\n"
                                                 for u in ("default", "fanout", "harness", "agent")))
    (directory / "token").write_text("admin-token\n")
    return directory


class Clock:
    """Plan seconds, set by the test."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def _owner(component: str) -> tuple[str, str]:
    return ("StatefulSet", "spine-postgres") if component == "postgres" else ("ReplicaSet", f"spine-{component}-5d8f7")


def _pod(component: str, suffix: str = "a", *, ready: bool = True, restarts: int = 0, waiting: str | None = None,
         owner: tuple[str, str] | None = None) -> tuple[str, dict]:
    kind, name = owner or _owner(component)
    pod_name = "spine-postgres-0" if kind == "StatefulSet" and owner is None else f"{name}-{suffix}"
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return pod_name, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": NS, "uid": f"uid-{pod_name}-{suffix}",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "owner",
                                          "controller": True}]},
        "status": {"phase": "Running" if ready else "Pending",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                   "containerStatuses": [{"name": "main", "ready": ready, "restartCount": restarts, "image": "x",
                                          "imageID": "", "state": state}]}}


def _put_substrate(fake, **changes: dict) -> dict[str, str]:
    """A pod per component (Ready unless `changes` says otherwise); returns component -> pod name."""
    names = {}
    for component in parts(SPINE):
        name, body = _pod(component, **changes.get(component, {}))
        fake.put(PODS, NS, name, body)
        names[component] = name
    return names


@pytest.fixture
def listening() -> Iterator[dict[str, int]]:
    """A real TCP listener for each Service the harness reaches (component -> port on 127.0.0.1)."""
    with ExitStack() as stack:
        ports = {}
        for component in (*SPINE.services, "postgres", "redis"):
            server = stack.enter_context(socket.socket())
            server.bind(("127.0.0.1", 0))
            server.listen()
            ports[component] = server.getsockname()[1]
        yield ports


def _local(endpoints, ports: dict[str, int]):
    """The cluster's endpoints with each Service's host and port replaced by a listener here."""
    def moved(url: str, component: str) -> str:
        parts_ = urlsplit(url)
        netloc = parts_.netloc.rsplit("@", 1)
        where = f"127.0.0.1:{ports[component]}"
        return parts_._replace(netloc=f"{netloc[0]}@{where}" if len(netloc) == 2 else where).geturl()
    return dataclasses.replace(endpoints, services={n: moved(u, n) for n, u in endpoints.services.items()},
                               postgres_dsn=moved(endpoints.postgres_dsn, "postgres"),
                               redis=moved(endpoints.redis, "redis"))


def _endpoints(credentials: Path):
    from arenac.runner.harness_commands import read_credentials
    return SPINE.cluster_endpoints(NS, read_credentials(credentials))


# ---- readiness ---------------------------------------------------------------------------------

def test_ready_when_every_pod_is_ready_and_every_port_accepts(fake, api, credentials, listening) -> None:
    _put_substrate(fake)
    waited = pb.wait_substrate(api, NS, SPINE, _local(_endpoints(credentials), listening), timeout_s=5, poll_s=0.05)
    assert 0 <= waited < 5


def test_a_pod_not_ready_is_named_with_what_it_waits_on(fake, api, credentials, listening) -> None:
    _put_substrate(fake, message={"ready": False, "waiting": "ImagePullBackOff"})
    with pytest.raises(pb.SubstrateNotReady) as raised:
        pb.wait_substrate(api, NS, SPINE, _local(_endpoints(credentials), listening), timeout_s=0.3, poll_s=0.05)
    message = str(raised.value)
    assert f"the substrate in {NS} is not ready within 0.3 s" in message
    assert "pod spine-message-5d8f7-a (Pending, main waiting (ImagePullBackOff))" in message
    assert "spine-gateway" not in message  # only what is not ready


def test_a_component_without_a_pod_is_named(fake, api, credentials, listening) -> None:
    _put_substrate(fake)
    fake.call(lambda: fake.emulator.objects[PODS, NS, "spine-postgres-0"].delete())
    with pytest.raises(pb.SubstrateNotReady, match="no pod of spine-postgres"):
        pb.wait_substrate(api, NS, SPINE, _local(_endpoints(credentials), listening), timeout_s=0.2, poll_s=0.05)


def test_a_port_that_refuses_is_named(fake, api, credentials, listening) -> None:
    _put_substrate(fake)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        free = closed.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(pb.SubstrateNotReady, match=rf"redis at 127\.0\.0\.1:{free} does not accept connections"):
            pb.wait_substrate(api, NS, SPINE, _local(_endpoints(credentials), {**listening, "redis": free}),
                              timeout_s=0.3, poll_s=0.05)


def _backend(bundle, tmp_path: Path, credentials: Path, api, **target) -> pb.ClusterBackend:
    control = Control(tmp_path / "ctl")
    control.create()
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return pb.ClusterBackend(bundle, scratch, StateDir(tmp_path / "state"), 1.0, probe("none"), token="tok",
                             listen=("127.0.0.1", 0), board=StatusBoard(control),
                             target=pb.ClusterTarget(NS, credentials, connect=lambda: api,
                                                     **{"ready_timeout_s": 0.3, "poll_s": 0.05, **target}))


@pytest.mark.parametrize("healthy", [False, True], ids=["faulted", "healthy"])
def test_provision_waits_for_the_substrate_and_says_why_not(fake, api, bundle, tmp_path, credentials, healthy) -> None:
    backend = _backend(bundle, tmp_path, credentials, api)
    with pytest.raises(pb.SubstrateNotReady, match=f"the substrate in {NS} is not ready within 0.3 s: .*"
                                                   "no pod of spine-gateway"):
        backend.provision(healthy=healthy)
    _put_substrate(fake)  # every pod ready: now the Services' names (cluster DNS, not here) are what is missing
    with pytest.raises(pb.SubstrateNotReady, match=rf"gateway at spine-gateway\.{NS}\.svc:8080 does not accept"):
        backend.provision(healthy=healthy)
    assert backend.io is None and backend.pids() == {}


def test_provision_refuses_unusable_credentials(api, bundle, tmp_path, credentials) -> None:
    (credentials / "token").unlink()
    with pytest.raises(KubeError, match="the credentials lack token"):
        _backend(bundle, tmp_path, credentials, api).provision(healthy=False)
    with pytest.raises(KubeError, match="cannot read it"):
        _backend(bundle, tmp_path, tmp_path / "nowhere", api).provision(healthy=False)


# ---- the watch ---------------------------------------------------------------------------------

def _delete_pod(api, name: str) -> None:
    from kubernetes.client import CoreV1Api
    CoreV1Api(api).delete_namespaced_pod(name, NS)


def test_a_pod_replaced_before_the_handover_is_the_infrastructures(fake, api) -> None:
    names = _put_substrate(fake)
    clock, lost = Clock(), []
    watch = PodWatch(api, NS, SPINE, None, clock, on_loss=lambda: lost.append(1))
    watch.check()
    assert watch.losses == []
    clock.t = 12.5
    _delete_pod(api, names["message"])
    fake.put(PODS, NS, *_pod("message", "b"))  # its replacement: only remembered
    watch.check()
    watch.check()  # seen once
    assert [(x.part, x.kind, x.t, x.how) for x in watch.losses] == [
        ("message", "substrate", 12.5, "pod spine-message-5d8f7-a gone")]
    assert lost == [1]
    assert watch.blame(handover_s=30.0, agent_calls=[]) == (
        "substrate part message pod spine-message-5d8f7-a gone before the handover (plan t=12.5 s)")


def test_a_pod_already_terminating_when_first_seen_is_no_loss(fake, api) -> None:
    _put_substrate(fake)
    name, old = _pod("channel", "old")
    old["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"  # an earlier rollout's, going
    fake.put(PODS, NS, name, old)
    watch = PodWatch(api, NS, SPINE, None, Clock())
    watch.check()
    watch.check()
    _delete_pod(api, name)
    watch.check()
    assert watch.losses == []
    fake.put(PODS, NS, *_pod("channel", restarts=1))  # the running one's restart still counts
    watch.check()
    assert [x.part for x in watch.losses] == ["channel"]


def test_a_container_restart_is_a_loss_and_a_pod_of_a_job_is_not_the_substrates(fake, api) -> None:
    _put_substrate(fake)
    fake.put(PODS, NS, *_pod("x", owner=("Job", "spine-migrate")))
    clock = Clock()
    watch = PodWatch(api, NS, SPINE, None, clock)
    watch.check()
    assert "spine-migrate-a" not in {p.name for p in app_pods(api, NS, SPINE)}
    fake.put(PODS, NS, *_pod("redis", restarts=1))
    _delete_pod(api, "spine-migrate-a")
    watch.check()
    assert [(x.part, x.how) for x in watch.losses] == [
        ("redis", "pod spine-redis-5d8f7-a restarted its containers (1 more)")]


def test_in_the_agents_window_a_replacement_is_the_agents_restart(fake, api) -> None:
    names = _put_substrate(fake)
    clock = Clock()
    watch = PodWatch(api, NS, SPINE, None, clock)
    watch.check()
    clock.t = 40.0
    watch.open_window()
    _delete_pod(api, names["gateway"])
    watch.check()
    watch.close_window()
    assert watch.losses == []
    assert watch.agent_restarts() == {**dict.fromkeys(parts(SPINE), 0), "gateway": 1}
    clock.t = 90.0  # after the freeze: a loss, which the agent's earlier replacement may have caused
    fake.put(PODS, NS, *_pod("auth", restarts=2))
    watch.check()
    assert [x.part for x in watch.losses] == ["auth"]
    assert watch.blame(handover_s=30.0, agent_calls=[]) is None
    # without the agent's replacement, nothing the agent did could have caused it
    other = PodWatch(api, NS, SPINE, None, clock)
    other.losses = list(watch.losses)
    assert other.blame(handover_s=30.0, agent_calls=[]).startswith(
        "substrate part auth pod spine-auth-5d8f7-a restarted its containers (2 more) at plan t=90 s, and no call")


def test_a_restart_on_purpose_is_no_loss_even_when_the_old_pod_goes_later(fake, api) -> None:
    names = _put_substrate(fake)
    watch = PodWatch(api, NS, SPINE, None, Clock())
    watch.check()
    with watch.restarting("maintenance"):
        fake.put(PODS, NS, *_pod("maintenance", "b"))  # the new pod, the old one still terminating
    _delete_pod(api, names["maintenance"])  # the old pod goes after the rollout was done
    watch.check()
    assert watch.losses == []
    _delete_pod(api, "spine-maintenance-5d8f7-b")  # the new pod replaced afterwards: a loss again
    watch.check()
    assert [x.how for x in watch.losses] == ["pod spine-maintenance-5d8f7-b gone"]


def test_the_backends_watch_looks_by_itself_every_second(fake, api, bundle, tmp_path, credentials) -> None:
    names = _put_substrate(fake)
    backend = _attached(_backend(bundle, tmp_path, credentials, api), api)
    lost = threading.Event()
    watch = backend.watch(Clock(), lost.set)
    try:
        assert not lost.wait(1.5)  # nothing changed: no loss
        _delete_pod(api, names["auth"])
        assert lost.wait(5)
        assert [x.part for x in watch.losses] == ["auth"]
    finally:
        backend.stop_substrate()


def test_an_api_that_does_not_answer_is_a_kube_error_at_a_fresh_look(fake, api) -> None:
    """A look the episode asks for (its checkpoints) raises: the episode ends as an infra_error. The
    API here is a closed port of this machine, a real refusal."""
    from kubernetes.client import ApiClient, Configuration

    _put_substrate(fake)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        configuration = Configuration()
        configuration.host = f"http://127.0.0.1:{closed.getsockname()[1]}"
        configuration.retries = 0
        gone = ApiClient(configuration)
        watch = PodWatch(gone, NS, SPINE, None, Clock())
        with pytest.raises(KubeError, match=f"cannot list the pods of {NS}"):
            watch.check(strict=True)
        gone.close()
    working = PodWatch(api, NS, SPINE, None, Clock())
    working.check(strict=True)  # the other side: the fake answers
    assert working.losses == []


# ---- the restart -------------------------------------------------------------------------------

def _workload(fake, resource, name: str) -> None:
    fake.put(resource, NS, name, {"apiVersion": "apps/v1", "kind": "Deployment" if resource == DEPLOYMENTS
                                  else "StatefulSet", "metadata": {"name": name, "namespace": NS, "generation": 1},
                                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                                           "template": {"metadata": {"labels": {"app": name}}}}})


def _attached(backend: pb.ClusterBackend, api, clock: Clock | None = None) -> pb.ClusterBackend:
    """The backend as provision leaves it, but on the fake API (no cluster DNS here for its hands)."""
    backend.api = api
    if clock is not None:
        backend.pod_watch = PodWatch(api, NS, SPINE, None, clock)
        backend.pod_watch.check()
    return backend


@pytest.mark.parametrize(("service", "resource", "kind"), [
    ("maintenance", DEPLOYMENTS, "deployments"), ("postgres", STATEFUL_SETS, "statefulsets")])
def test_the_restart_is_a_rollout_restart_of_the_kind_its_pods_name(fake, api, bundle, tmp_path, credentials,
                                                                    service, resource, kind) -> None:
    _put_substrate(fake)
    _workload(fake, resource, f"spine-{service}")
    backend = _attached(_backend(bundle, tmp_path, credentials, api), api, Clock())
    with fake.controller():
        backend.restart(service)
    patches = [r for r in fake.requests() if r.method == "PATCH"]
    assert [r.path for r in patches] == [f"/apis/apps/v1/namespaces/{NS}/{kind}/spine-{service}"]
    template = fake.get(resource, NS, f"spine-{service}")["spec"]["template"]["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/restartedAt" in template
    assert backend.pod_watch is not None and backend.pod_watch.losses == []


def test_no_pod_no_restart(fake, api, bundle, tmp_path, credentials) -> None:
    backend = _attached(_backend(bundle, tmp_path, credentials, api), api)
    with pytest.raises(KubeError, match=f"cannot restart {NS}/spine-maintenance: no pod"):
        backend.restart("maintenance")
    assert not [r for r in fake.requests() if r.method == "PATCH"]


# ---- the ConfigMaps ----------------------------------------------------------------------------

def _put_config_maps(fake, skip: str = "") -> None:
    for component in (*SPINE.services, "redis"):
        name = f"spine-{component}-config"
        if name != skip:
            fake.put(CONFIG_MAPS, NS, name, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": name, "namespace": NS},
                                             "data": {"B_KEY": "2", "A_KEY": f"{component}-1"}})


def test_the_configmaps_are_read_by_name_into_the_snapshots_record(fake, api, bundle, tmp_path, credentials) -> None:
    _put_config_maps(fake)
    found = _attached(_backend(bundle, tmp_path, credentials, api), api).configmaps()
    assert sorted(found) == sorted((*SPINE.services, "redis"))
    record = configmaps_of(found)
    assert list(record["message"].items()) == [("A_KEY", "message-1"), ("B_KEY", "2")]  # sorted, as local files give
    assert configmaps_of({"x": {"n": 3}}) == {"x": {"n": "3"}}
    gets = {r.path for r in fake.requests() if r.method == "GET"}
    assert gets == {f"/api/v1/namespaces/{NS}/configmaps/spine-{c}-config" for c in (*SPINE.services, "redis")}


def test_a_missing_configmap_is_named(fake, api, bundle, tmp_path, credentials) -> None:
    _put_config_maps(fake, skip="spine-redis-config")
    with pytest.raises(KubeError, match=f"cannot read ConfigMap {NS}/spine-redis-config: HTTP 404"):
        _attached(_backend(bundle, tmp_path, credentials, api), api).configmaps()


def test_a_snapshot_takes_its_configmaps_from_one_place_only(bundle) -> None:
    with pytest.raises(ValueError, match="not both"):
        take_snapshot(None, bundle.plan, 0.0, stack=object(), configmap_data={})  # type: ignore[arg-type]


# ---- the doors and the handover ------------------------------------------------------------------

def test_the_broker_serves_the_plans_tools_but_kubectl(bundle, tmp_path, credentials) -> None:
    endpoints = _endpoints(credentials)
    log = EventLog(tmp_path / "run" / "events.jsonl", EpisodeClock(1.0))
    (tmp_path / "run").mkdir()
    (tmp_path / "scratch").mkdir()
    doors = AgentAccess.start_without_kubectl(bundle, endpoints, SPINE, tmp_path / "scratch", log, lambda: None,
                                              token="tok")
    try:
        assert "kubectl" in brokered_tools(bundle.plan)
        assert doors.broker.tools == tuple(t for t in brokered_tools(bundle.plan) if t != "kubectl")
        assert not (doors.tools_dir / "kubectl").exists() and (doors.tools_dir / "time-left").exists()
        refused = doors.broker.call("kubectl", ["get", "pods"])
        assert refused.code != 0 and not refused.allowed
        assert doors.agent_restarts() is None  # the cluster's pod watch counts them there
    finally:
        doors.stop()


def _password_taker(server: socket.socket, taken: list[tuple[str, str]]) -> None:
    """A PostgreSQL server as far as its password request: it refuses encryption, asks for the
    password in clear text, records (user, password) and ends the connection."""
    connection, _ = server.accept()
    with connection:
        reader = connection.makefile("rb")
        while True:
            length, code = struct.unpack("!ii", reader.read(8))
            if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: not here
                connection.sendall(b"N")
                continue
            fields = reader.read(length - 8).split(b"\0")
            user = fields[fields.index(b"user") + 1].decode()
            break
        connection.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind, length = reader.read(1), struct.unpack("!i", reader.read(4))[0]
        assert kind == b"p"
        taken.append((user, reader.read(length - 4).rstrip(b"\0").decode()))


def test_db_sql_reaches_the_database_at_its_connection_strings_host(bundle, credentials) -> None:
    """psql itself runs, against a server of the test's at the DSN's host and port (127.0.0.2, not
    the local stack's 127.0.0.1), and sends the role's password as it is, not as the DSN encodes it."""
    from arenac.broker.inflight import InFlight
    from arenac.broker.tools import ToolBox, ToolTarget

    role, password = "spine_operator", "p@ss/w rd%"
    surface = bundle.plan.access.model_copy(update={"db_role": role})
    endpoints = _endpoints(credentials)
    taken: list[tuple[str, str]] = []
    with socket.socket() as server:
        server.bind(("127.0.0.2", 0))
        server.listen()
        port = server.getsockname()[1]
        thread = threading.Thread(target=_password_taker, args=(server, taken), daemon=True)
        thread.start()
        dsn = f"postgresql://{role}:{quote(password, safe='')}@127.0.0.2:{port}/spine"
        moved = dataclasses.replace(endpoints, postgres={**endpoints.postgres, role: dsn})
        toolbox = ToolBox(None, surface, (), target=ToolTarget(lambda: moved, SPINE, InFlight()))
        result = toolbox.call("db-sql", ["-c", "SELECT 1"])
        thread.join(timeout=10)
    assert taken == [(role, password)], result.stderr
    assert result.code != 0  # the server ended the connection


def test_the_handover_opens_the_watchs_agent_window_until_the_freeze(fake, api, bundle, tmp_path,
                                                                    credentials) -> None:
    _put_substrate(fake)
    backend = _attached(_backend(bundle, tmp_path, credentials, api), api, Clock())
    log = EventLog(tmp_path / "run" / "events.jsonl", EpisodeClock(1.0))
    (tmp_path / "run").mkdir()
    backend.doors = AgentAccess.start_without_kubectl(bundle, _endpoints(credentials), SPINE, backend.scratch, log,
                                                      lambda: None, token="tok", listen=("127.0.0.1", 0))
    try:
        agent = backend.start_agent(AgentSpec(EXTERNAL, ""), tmp_path / "run" / "agent.log")
        assert backend.board.status.handed_over and backend.board.status.phase == "handed_over"
        assert backend.pod_watch is not None and backend.pod_watch.in_agent_window
        assert agent.running()
        agent.freeze()
        assert not backend.pod_watch.in_agent_window and backend.board.status.phase == "agent_done"
        assert backend.doors.broker.closed
    finally:
        backend.stop_agent_side()


# ---- the Role covers every call ------------------------------------------------------------------

def _api_request(method: str, path: str, query: dict[str, str]) -> ApiRequest:
    """The RBAC attributes the API server derives from one HTTP request."""
    match = re.fullmatch(r"/(?:api/v1|apis/([^/]+)/[^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?(?:/([^/]+))?", path)
    assert match, path
    group, namespace, resource, name, sub = match.groups()
    verb = {"GET": "get" if name else ("watch" if query.get("watch") else "list"), "PATCH": "patch",
            "PUT": "update", "POST": "create", "DELETE": "delete"}[method]
    return ApiRequest(verb, group or "", resource, subresource=sub or "", name=name or "", namespace=namespace)


@pytest.fixture(scope="module")
def role(bundle):
    install = install_plan(bundle.directory / "chart", NS, HARNESS)
    credentials = hp.SubstrateCredentials(SPINE.cluster_credentials, (("token", "x"),))
    spec = hp.HarnessPodSpec(bundle=bundle, names=NAMES, install=install, image="harness:test", time_scale=1.0,
                             credentials=credentials, api_server=(hp.ApiServerEndpoint("10.0.0.1/32", 6443),),
                             broker_token="tok")
    return Authorizer([o.body for o in hp.harness_pod_objects(spec).objects], HARNESS_USER)


def test_the_role_covers_every_call_the_backend_makes(fake, api, bundle, tmp_path, credentials, listening,
                                                     role) -> None:
    assert bundle.plan.challenges.restart == ("maintenance",)
    _put_substrate(fake)
    _put_config_maps(fake)
    _workload(fake, DEPLOYMENTS, "spine-maintenance")
    before = len(fake.requests())
    pb.wait_substrate(api, NS, SPINE, _local(_endpoints(credentials), listening), timeout_s=5, poll_s=0.05)
    backend = _attached(_backend(bundle, tmp_path, credentials, api), api, Clock())
    backend.pod_watch.check()
    with fake.controller():
        backend.restart("maintenance")
    backend.configmaps()
    made = [_api_request(r.method, r.path, r.query) for r in fake.requests()[before:]]
    assert {(r.verb, r.resource) for r in made} == {("list", "pods"), ("patch", "deployments"),
                                                      ("get", "deployments"), ("get", "configmaps")}
    denied = [r.describe() for r in made if not role.allows(r)]
    assert denied == []


@pytest.mark.parametrize("request_", [
    ApiRequest("list", "", "configmaps", namespace=NS),
    ApiRequest("patch", "apps", "deployments", name="spine-message", namespace=NS),  # not a restart target
    ApiRequest("get", "", "pods", name="spine-message-5d8f7-a", namespace=NS),
    ApiRequest("get", "", "secrets", name="spine-credentials", namespace=NS),
    ApiRequest("list", "", "pods", namespace=HARNESS),
], ids=lambda r: r.describe())
def test_the_role_checker_denies_what_the_backend_never_asks(role, request_) -> None:
    assert not role.allows(request_)


def test_the_request_reader_reads_the_rbac_attributes() -> None:
    assert _api_request("GET", f"/api/v1/namespaces/{NS}/pods", {}) == ApiRequest("list", "", "pods", namespace=NS)
    assert _api_request("GET", f"/api/v1/namespaces/{NS}/pods", {"watch": "true"}).verb == "watch"
    assert _api_request("PATCH", f"/apis/apps/v1/namespaces/{NS}/statefulsets/spine-postgres", {}) == ApiRequest(
        "patch", "apps", "statefulsets", name="spine-postgres", namespace=NS)
    assert _api_request("GET", f"/api/v1/namespaces/{NS}/pods/p/log", {}).subresource == "log"



# ---- the whole episode on the cluster backend ------------------------------------------------------

@pytest.mark.parametrize("healthy", [False, True], ids=["faulted", "healthy"])
def test_an_episode_whose_substrate_never_gets_ready_is_graded_infra_error(fake, api, bundle, tmp_path, credentials,
                                                                           monkeypatch, healthy) -> None:
    """`harness episode --target-namespace [--healthy]`'s episode (external_agent.run_external_episode),
    the trial and the plan as they run in the harness pod, on the fake API: a pod that never gets
    ready ends the trial as infra_error at provisioning, named, graded, and status.json says so; the
    healthy control's run records that it injects no fault."""
    from arenac.runner.external_agent import run_external_episode

    monkeypatch.setenv("ARENAC_STATE_DIR", str(tmp_path / "state"))  # not this machine's runner's records
    _put_substrate(fake, fanout={"ready": False, "waiting": "CrashLoopBackOff"})
    control = Control(tmp_path / "ctl")
    control.create()
    board = StatusBoard(control)
    target = pb.ClusterTarget(NS, credentials, connect=lambda: api, ready_timeout_s=0.5, poll_s=0.1)
    result = run_external_episode(bundle, control, board, ("127.0.0.1", 0), "tok", 1.0, threading.Event(),
                                  cluster=target, inject_faults=not healthy)
    assert result.status == "infra_error"
    assert json.loads((control.run_dir / "run.json").read_text())["inject_faults"] is not healthy
    assert "pod spine-fanout-5d8f7-a (Pending, main waiting (CrashLoopBackOff))" in result.reason
    assert board.status.phase == "graded" and board.status.trial_status == "infra_error"
    assert not board.status.handed_over
    assert (control.run_dir / "verdict.json").is_file()
    timeline = (control.run_dir / "evidence" / "timeline.json").read_text()
    assert "the harness pod's episode process (substrate in namespace" in timeline
