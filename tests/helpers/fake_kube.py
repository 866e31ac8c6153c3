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
  keeps one while it empties it (the emulator itself deletes at once).

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
            for resource in (NAMESPACES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS):
                emulator.resources[resource] = kmock.ResourceInfo()
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
