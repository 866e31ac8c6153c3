"""A fake Kubernetes API server for the cluster machinery's tests: kmock's `KubernetesEmulator`
(an in-memory store of objects behind HTTP, not a cluster: no controllers, no admission, no
authentication, no label selectors), served on loopback from a thread of its own, so that the
synchronous official `kubernetes` client talks to it over real HTTP as it would to an API server.

What the emulator does not serve and the tests need, this fake adds, each a few lines and named here:

- Namespaces themselves: kmock 0.8's URL parser reads `/api/v1/namespaces/NAME` as the namespace
  prefix of a namespaced path (and fails on `/api/v1/namespaces`, answering 500), so the emulator
  cannot store a Namespace. `_parse_path` reads those two paths (and only those) as the
  cluster-scoped resource `namespaces`, and hands every other path to kmock's own parser; the
  emulator's store then serves them as any other object.
- `POST .../serviceaccounts/NAME/token` (TokenRequest), a kmock reaction: 404 unless the ServiceAccount exists, else
  the request's spec echoed with a token and an expiration timestamp (`issue_token`).
- a namespace's finalizers: a namespace given a finalizer by the test's `stick()` is marked
  `Terminating` by DELETE (a kmock sink) and stays until `release()`, as a cluster's namespace controller
  keeps one while it empties it (the emulator itself deletes at once). Deleting a namespace does not
  delete what is in it (no namespace controller): a test sees every object left behind.
- `metadata.generation` of Deployments, StatefulSets and Jobs, as the API server keeps it: 1 at
  creation, one more on each PATCH that changes `spec` (kmock sinks; the emulator stores no
  generation of its own).
- `controller(...)`: a stand-in for the workload controllers and the kubelet, run from a thread of
  the test's for as long as its `with` lasts (bounded): each Deployment or StatefulSet whose
  status has not yet observed its generation is marked rolled out and ready `delay_s` after its
  change was first seen, each Job that is not suspended is marked complete; a workload named in
  `stuck` is never ready and gets one Pending pod, with its template's labels, whose container waits
  with that reason (e.g. `ImagePullBackOff`), as a kubelet reports an image it cannot pull.
- `fail_create(nth, status)`: the nth POST from now on answers `status` (a kmock reaction). The
  emulator stores a created object before any reaction answers, so the object exists although the
  client was told 500: as after a server that failed past its commit, the runner cannot know.

`requests()` is every request served, as (method, path, query, JSON body), for the tests to
assert what the client sent (and that nothing cluster-scoped but namespaces was touched).
Everything runs on one event loop in one thread; `stop()` (or leaving the `with`) shuts the server
and joins the thread within a bound.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import kmock
from kmock._internal import parsing

T = TypeVar("T")
NAMESPACES = kmock.resource("", "v1", "namespaces")
SERVICE_ACCOUNTS = kmock.resource("", "v1", "serviceaccounts")
ROLES = kmock.resource("rbac.authorization.k8s.io", "v1", "roles")
ROLE_BINDINGS = kmock.resource("rbac.authorization.k8s.io", "v1", "rolebindings")
DEPLOYMENTS = kmock.resource("apps", "v1", "deployments")
STATEFUL_SETS = kmock.resource("apps", "v1", "statefulsets")
JOBS = kmock.resource("batch", "v1", "jobs")
PODS = kmock.resource("", "v1", "pods")
CONFIG_MAPS = kmock.resource("", "v1", "configmaps")
# every kind a bundle's chart renders, and what a workload makes: listing one that holds no object
# answers an empty list, as a cluster does (the emulator answers 404 for a resource it does not know)
SERVED = (NAMESPACES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS, DEPLOYMENTS, STATEFUL_SETS, JOBS, PODS, CONFIG_MAPS,
          *(kmock.resource("", "v1", plural) for plural in (
              "secrets", "services", "persistentvolumeclaims", "resourcequotas", "limitranges")),
          kmock.resource("networking.k8s.io", "v1", "networkpolicies"),
          kmock.resource("networking.k8s.io", "v1", "ingresses"),
          kmock.resource("batch", "v1", "cronjobs"),
          kmock.resource("apps", "v1", "daemonsets"),
          kmock.resource("apps", "v1", "replicasets"),
          kmock.resource("policy", "v1", "poddisruptionbudgets"),
          kmock.resource("autoscaling", "v2", "horizontalpodautoscalers"))
ROLLED = (DEPLOYMENTS, STATEFUL_SETS)  # what the controller rolls out
FAKE_TOKEN = "fake-token-for-the-agent"


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    body: Any


class FakeKubeApi:
    """The running fake; made by `fake_kube_api()`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, emulator: kmock.KubernetesEmulator, url: str) -> None:
        self.loop, self.emulator, self.url = loop, emulator, url

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's loop (the emulator is not thread-safe) and return its result."""
        async def run() -> T:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=10)

    def requests(self) -> list[Seen]:
        return self.call(lambda: [Seen(str(r.method.value).upper(), r.url.path, dict(r.params), r.data)
                                  for r in self.emulator])

    def put(self, resource: kmock.resource, namespace: str | None, name: str, obj: dict[str, Any]) -> None:
        """Store an object as if something else (another trial, a controller) had made it."""
        def store() -> None:
            self.emulator.objects[resource, namespace, name] = obj
        self.call(store)

    def get(self, resource: kmock.resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        def read() -> dict[str, Any] | None:
            key = (resource, namespace, name)
            if key not in self.emulator.objects or self.emulator.objects[key].deleted:
                return None
            return dict(self.emulator.objects[key].raw)
        return self.call(read)

    def names(self, resource: kmock.resource, namespace: str | None = None) -> list[str]:
        def read() -> list[str]:
            return sorted(name for (res, ns, name), obj in self.emulator.objects.items()
                          if res == resource and (namespace is None or ns == namespace) and not obj.deleted)
        return self.call(read)

    def stick(self, namespace: str) -> None:
        """Make `namespace`'s DELETE leave it Terminating (a finalizer that never finishes)."""
        def hold() -> None:
            self.emulator.objects[NAMESPACES, None, namespace].patch({"metadata": {"finalizers": ["kubernetes"]}})
        self.call(hold)

    def release(self, namespace: str) -> None:
        """The finalizer finishes: a Terminating namespace is gone."""
        def drop() -> None:
            obj = self.emulator.objects[NAMESPACES, None, namespace]
            obj.patch({"metadata": {"finalizers": []}})
            obj.delete()
        self.call(drop)

    def everything(self) -> list[tuple[str, str | None, str]]:
        """Every object stored and not deleted, as (plural, namespace, name), sorted."""
        def read() -> list[tuple[str, str | None, str]]:
            return sorted((res.plural or "", ns, name) for (res, ns, name), obj in self.emulator.objects.items()
                          if not obj.deleted)
        return self.call(read)

    def fail_create(self, nth: int, status: int = 500) -> None:
        """The nth POST from now on answers `status`; every other POST is served as before."""
        seen = [0]

        def answer(request: kmock.Request) -> Any:
            seen[0] += 1
            if seen[0] == nth:
                return kmock.Response(status=status, payload={
                    "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": status,
                    "reason": "InternalError", "message": "the fake API server fails this request on purpose"})
            raise NotImplementedError  # not this one: kmock serves it as if this reaction were not there
        self.call(lambda: self.emulator["post"] << answer)

    @contextmanager
    def controller(self, delay_s: float = 0.05, stuck: dict[str, str] | None = None,
                   period_s: float = 0.02, lifetime_s: float = 60.0) -> Iterator[None]:
        """Workload controllers and a kubelet, while the `with` lasts (see the module's docstring)."""
        first_seen: dict[tuple[Any, str, str, int], float] = {}
        with _ticking(self, lambda: _reconcile(self.emulator, first_seen, delay_s, stuck or {}),
                      "fake-kube-controller", period_s, lifetime_s):
            yield


def _issue_token(emulator: kmock.KubernetesEmulator) -> Callable[[kmock.Request], Any]:
    def issue(request: kmock.Request) -> Any:
        key = (SERVICE_ACCOUNTS, request.namespace, request.name)
        if key not in emulator.objects or emulator.objects[key].deleted:
            return kmock.KubernetesObjectNotFoundError()
        spec = dict((request.data or {}).get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or 3600)
        expires = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=seconds)
        spec.setdefault("audiences", ["https://kubernetes.default.svc"])
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"name": request.name, "namespace": request.namespace},
                "spec": spec,
                "status": {"token": FAKE_TOKEN, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}
    return issue


def _reconcile(emulator: kmock.KubernetesEmulator, first_seen: dict[tuple[Any, str, str, int], float],
               delay_s: float, stuck: dict[str, str]) -> None:
    now = time.monotonic()
    for (resource, namespace, name), obj in list(emulator.objects.items()):
        if obj.deleted or namespace is None:
            continue
        raw = obj.raw
        generation = int(raw.get("metadata", {}).get("generation") or 1)
        status = raw.get("status") or {}
        spec = raw.get("spec") or {}
        if resource in ROLLED:
            if name in stuck:
                _stuck_pod(emulator, namespace, name, raw, stuck[name])
                obj.patch({"status": {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
                                      "readyReplicas": 0, "availableReplicas": 0}})
                continue
            if status.get("observedGeneration") == generation and status.get("readyReplicas") is not None:
                continue
            seen = first_seen.setdefault((resource, namespace, name, generation), now)
            if now - seen < delay_s:
                continue
            replicas = int(spec.get("replicas", 1))
            obj.patch({"status": {"observedGeneration": generation, "replicas": replicas,
                                  "updatedReplicas": replicas, "readyReplicas": replicas,
                                  "availableReplicas": replicas, "currentRevision": f"r{generation}",
                                  "updateRevision": f"r{generation}"}})
        elif resource == JOBS and not spec.get("suspend") and not status.get("succeeded"):
            if name in stuck:
                _stuck_pod(emulator, namespace, name, raw, stuck[name])
                continue
            obj.patch({"status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}})


def _stuck_pod(emulator: kmock.KubernetesEmulator, namespace: str, workload: str, raw: dict[str, Any],
               reason: str) -> None:
    key = (PODS, namespace, f"{workload}-0")
    if key in emulator.objects and not emulator.objects[key].deleted:
        return
    template = (raw.get("spec") or {}).get("template") or {}
    containers = ((template.get("spec") or {}).get("containers") or [{"name": "main"}])
    emulator.objects[key] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{workload}-0", "namespace": namespace,
                     "labels": dict((template.get("metadata") or {}).get("labels") or {})},
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": c["name"], "ready": False, "restartCount": 0, "image": c.get("image", ""), "imageID": "",
             "state": {"waiting": {"reason": reason, "message": f"the fake kubelet: {reason}"}}}
            for c in containers]}}


def _generation(emulator: kmock.KubernetesEmulator, on_create: bool) -> Callable[[kmock.Request], Any]:
    """The API server's `metadata.generation`: 1 at creation, +1 on a PATCH that touches spec."""
    def bump(request: kmock.Request) -> Any:
        data = request.data or {}
        key = (request.resource, request.namespace or (data.get("metadata") or {}).get("namespace"),
               request.name or (data.get("metadata") or {}).get("name"))
        if key not in emulator.objects or emulator.objects[key].deleted:
            raise NotImplementedError
        obj = emulator.objects[key]
        if on_create:
            obj.patch({"metadata": {"generation": 1}})
        elif "spec" in data:
            obj.patch({"metadata": {"generation": int(obj.get("metadata", {}).get("generation") or 1) + 1}})
        # not an answer: kmock goes on to the emulator's own, with the generation in it (a reaction
        # that returns nothing instead would be spent after its first request)
        raise NotImplementedError
    return bump


def _terminating_namespace(emulator: kmock.KubernetesEmulator) -> Callable[[kmock.Request], Any]:
    """A namespace with finalizers is marked for deletion by the emulator (deletionTimestamp): show
    it as a cluster does, in phase Terminating."""
    def mark(request: kmock.Request) -> Any:
        key = (NAMESPACES, None, request.name)
        if key in emulator.objects and not emulator.objects[key].deleted:
            obj = emulator.objects[key]
            if obj.get("metadata", {}).get("deletionTimestamp"):
                obj.patch({"status": {"phase": "Terminating"}})
        return None  # no content: the emulator's own DELETE answers
    return mark


_NAMESPACE_PATH = re.compile(r"^/api/v1/namespaces(?:/([^/]+))?/?$")
_kmock_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    match = _NAMESPACE_PATH.match(path)
    if match is None:
        return _kmock_parse_path(path)
    return parsing.ParsedPath(group="", version="v1", plural="namespaces", namespace=None, name=match.group(1))


@contextmanager
def fake_kube_api() -> Iterator[FakeKubeApi]:
    started: dict[str, Any] = {}
    ready = threading.Event()
    stop: asyncio.Event | None = None

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
            for resource in SERVED:
                emulator.resources[resource] = kmock.ResourceInfo()
            for resource in (DEPLOYMENTS, STATEFUL_SETS, JOBS):
                emulator["post", resource] << _generation(emulator, on_create=True)
                emulator["patch", resource] << _generation(emulator, on_create=False)
            emulator["post", SERVICE_ACCOUNTS, kmock.subresource("token")] << _issue_token(emulator)
            emulator["delete", NAMESPACES] >> _terminating_namespace(emulator)
            started.update(loop=asyncio.get_running_loop(), emulator=emulator, url=str(server.url).rstrip("/"))
            ready.set()
            await stop.wait()

    parsing.parse_path = _parse_path  # see the module's docstring; restored below
    thread = threading.Thread(target=lambda: asyncio.run(serve()), name="fake-kube-api", daemon=True)
    thread.start()
    if not ready.wait(timeout=10):
        raise RuntimeError("the fake Kubernetes API did not start within 10 s")
    fake = FakeKubeApi(started["loop"], started["emulator"], started["url"])
    try:
        yield fake
    finally:
        parsing.parse_path = _kmock_parse_path
        fake.loop.call_soon_threadsafe(lambda: stop.set() if stop is not None else None)
        thread.join(timeout=10)
        if thread.is_alive():
            raise RuntimeError("the fake Kubernetes API did not stop within 10 s")


# ---- added for the runner's side of a trial (tests/runner/kube/test_cluster_trial.py) --------------
# Appended, not woven in: each is switched on by the test that needs it, on a running fake.
SECRETS = kmock.resource("", "v1", "secrets")


def secrets_as_data(fake: FakeKubeApi) -> None:
    """The API server's handling of a Secret's `stringData`: merged into `data`, base64-encoded, as
    a created Secret is stored (the chart writes its credentials as stringData; the runner reads data)."""
    import base64

    def store(request: kmock.Request) -> Any:
        body = request.data or {}
        key = (SECRETS, request.namespace or (body.get("metadata") or {}).get("namespace"),
               (body.get("metadata") or {}).get("name"))
        string_data = body.get("stringData") or {}
        if key in fake.emulator.objects and string_data:
            fake.emulator.objects[key].patch({"data": {k: base64.b64encode(str(v).encode()).decode()
                                                       for k, v in string_data.items()}})
        raise NotImplementedError  # not an answer: the emulator's own POST answers (as _generation)
    fake.call(lambda: fake.emulator["post", SECRETS] << store)


@contextmanager
def kubelet(fake: FakeKubeApi, *, ready: bool = True, phase: str = "Running", delay_s: float = 0.05,
            period_s: float = 0.02, lifetime_s: float = 60.0) -> Iterator[None]:
    """A stand-in for the kubelet of bare Pods (the harness pod), while the `with` lasts: each Pod
    without a status is given `phase` (and the Ready condition when `ready`, as a passing readiness
    probe does) `delay_s` after it was first seen. Pods that already have a status are left alone."""
    first_seen: dict[tuple[str, str], float] = {}

    def mark() -> None:
        now = time.monotonic()
        for (resource, namespace, name), obj in list(fake.emulator.objects.items()):
            if resource != PODS or obj.deleted or namespace is None or (obj.raw.get("status") or {}).get("phase"):
                continue
            if now - first_seen.setdefault((namespace, name), now) < delay_s:
                continue
            containers = ((obj.raw.get("spec") or {}).get("containers") or [{"name": "main"}])
            obj.patch({"status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [{"name": c["name"], "ready": ready, "restartCount": 0,
                                       "image": c.get("image", ""), "imageID": "",
                                       "state": {"running": {"startedAt": "2030-01-01T00:00:00Z"}}}
                                      for c in containers]}})

    with _ticking(fake, mark, "fake-kubelet", period_s, lifetime_s):
        yield


@contextmanager
def _ticking(fake: FakeKubeApi, tick: Callable[[], None], name: str, period_s: float,
             lifetime_s: float) -> Iterator[None]:
    """`tick` on the server's loop every `period_s`, from a thread of its own, while the `with` lasts
    (at most `lifetime_s`): the controller's and the kubelet's stand-ins."""
    stop = threading.Event()

    def loop() -> None:
        deadline = time.monotonic() + lifetime_s
        while not stop.is_set() and time.monotonic() < deadline:
            fake.call(tick)
            stop.wait(period_s)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def fail_requests(fake: FakeKubeApi, method: str, resource: kmock.resource, status: int = 500,
                  subresource: str | None = None) -> None:
    """Every `method` request to `resource` (or its `subresource`) from now on answers `status`: an
    API server that fails one kind of request mid-trial (fail_create(kind=...) is `"post"`)."""
    def answer(_request: kmock.Request) -> Any:
        return kmock.Response(status=status, payload={
            "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": status,
            "reason": "InternalError", "message": "the fake API server fails this request on purpose"})
    criteria: tuple[Any, ...] = (method, resource) if subresource is None else (
        method, resource, kmock.subresource(subresource))
    # .override: before the fake's own reactions (the TokenRequest's answers otherwise, registered first)
    fake.call(lambda: fake.emulator[criteria].override << answer)
