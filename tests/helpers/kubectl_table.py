"""The kubectl table (issue 13, item 7): kubectl commands, the API requests each sends, and what
each access profile of the spine library (`scoped_kubectl`, `shell`, `confined`) may do with it.
The local backend's emulated kubectl and a real cluster must agree with it; three tests read it
(docs/kubernetes.md, "The kubectl table"):

- tests/broker/test_kubectl_rbac.py runs every command through the broker over a live stack, once
  per profile (live): an allowed command succeeds, a denied one fails with the API server's
  Forbidden message for its first denied request;
- tests/broker/test_kubectl_table.py evaluates every row's requests with the broker's RBAC
  authorizer (arenac/broker/rbac.py) on the RBAC the compiler renders for each profile (no stack);
- tests/runner/kube/test_kubectl_table_cluster.py asks a real cluster (`kubectl auth can-i`, marker
  `cluster`) about every request, under each profile's RBAC applied by arenac/runner/kube.

A row is a command (words split as a shell would; `{pod:COMPONENT}` is that component's pod, filled
by `fill`), its API `requests` in the order kubectl sends them (those an RBAC decision is made on;
a request whose denial kubectl ignores, such as describe's events, is left out), and per profile
either `ALLOWED` (every request is granted) or `Denied(request)`, the first request the profile's
RBAC refuses: the one the Forbidden message names, and every request before it granted. A
`question` row is an `auth can-i`: its one request is the question asked, `ALLOWED` is the answer
"yes" (exit 0) and `Denied` the answer "no" (exit 1); the SelfSubjectAccessReview it sends is
granted to every authenticated user (the cluster's `system:basic-user`), not by the bundle.

The namespace of a request is the application namespace as the bundles name it (`APPLICATION`,
`arenac`: the broker's, and the runner rewrites it to the trial's on a cluster), another namespace,
or "" for the cluster scope. `derived` marks a row whose expectations were derived from the
bundles' RBAC objects and have not yet been confirmed by a run of the live broker test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from arenac.broker.rbac import ApiRequest
from helpers import ROOT

APPLICATION = "arenac"  # the application namespace as the bundles (and the broker) name it
Profile = Literal["scoped_kubectl", "shell", "confined"]
PROFILES: tuple[Profile, ...] = ("scoped_kubectl", "shell", "confined")
# the tasks whose bundles hold the three profiles' RBAC (slow-reads has all three)
RBAC_TASKS = ("tasks/slow-reads.arena", "tasks/revoked-grant.arena")
_POD = re.compile(r"\{pod:([a-z]+)\}")


@dataclass(frozen=True)
class Request:
    """One API request as RBAC sees it; `resource` may carry its subresource (`pods/exec`)."""

    verb: str
    resource: str
    name: str = ""
    group: str = ""
    namespace: str = APPLICATION

    @property
    def base(self) -> str:
        return self.resource.partition("/")[0]

    @property
    def subresource(self) -> str:
        return self.resource.partition("/")[2]

    def filled(self, pod: Callable[[str], str]) -> Request:
        return replace(self, name=fill(self.name, pod))

    def api_request(self, pod: Callable[[str], str]) -> ApiRequest:
        """The request as the broker's authorizer takes it (its pod placeholders filled)."""
        return ApiRequest(self.verb, self.group, self.base, self.subresource, fill(self.name, pod), self.namespace)

    def __str__(self) -> str:
        group = f".{self.group}" if self.group else ""
        name = f" {self.name}" if self.name else ""
        where = "" if self.namespace == APPLICATION else f" in {self.namespace or 'the cluster scope'}"
        return f"{self.verb} {self.resource}{group}{name}{where}"


@dataclass(frozen=True)
class Allowed:
    def __str__(self) -> str:
        return "allowed"


ALLOWED = Allowed()


@dataclass(frozen=True)
class Denied:
    request: Request  # the first request the profile's RBAC refuses

    def __str__(self) -> str:
        return f"denied: {self.request}"


Outcome = Allowed | Denied


@dataclass(frozen=True)
class Row:
    command: str
    requests: tuple[Request, ...]
    scoped_kubectl: Outcome
    shell: Outcome
    confined: Outcome
    question: bool = False  # `auth can-i`: ALLOWED is "yes", Denied is "no"
    derived: bool = False  # expectations from the bundles' RBAC, not yet confirmed on the live broker

    def __post_init__(self) -> None:
        if not self.requests:
            raise ValueError(f"{self.command}: a row names at least its primary request")
        if self.question and len(self.requests) != 1:
            raise ValueError(f"{self.command}: an auth can-i row asks exactly one request")
        for profile in PROFILES:
            outcome = self.outcome(profile)
            if isinstance(outcome, Denied) and outcome.request not in self.requests:
                raise ValueError(f"{self.command}: {profile}'s denied request {outcome.request} is not one of its "
                                 "requests")

    def outcome(self, profile: str) -> Outcome:
        if profile not in PROFILES:
            raise KeyError(profile)
        outcome: Outcome = getattr(self, profile)
        return outcome

    def expected_answers(self, profile: str) -> Iterator[tuple[Request, bool]]:
        """(request, granted?) for the requests a profile's outcome decides: all of an allowed
        row's (True), and a denied row's up to its first denied request (True..., then False)."""
        outcome = self.outcome(profile)
        for request in self.requests:
            if isinstance(outcome, Denied) and request == outcome.request:
                yield request, False
                return
            yield request, True


def req(verb: str, resource: str, name: str = "", group: str = "", namespace: str = APPLICATION) -> Request:
    return Request(verb, resource, name, group, namespace)


def deny(verb: str, resource: str, name: str = "", group: str = "", namespace: str = APPLICATION) -> Denied:
    return Denied(Request(verb, resource, name, group, namespace))


def fill(text: str, pod: Callable[[str], str]) -> str:
    """`{pod:COMPONENT}` replaced by `pod(COMPONENT)` (the broker's `Episode.pod`, or `stand_in_pod`)."""
    return _POD.sub(lambda match: pod(match.group(1)), text)


def stand_in_pod(component: str) -> str:
    """A pod name for a cluster without the chart installed (RBAC decides on names, not on objects;
    the agent's rules on pods name none); spine's PostgreSQL pod keeps its StatefulSet name."""
    return "spine-postgres-0" if component == "postgres" else f"spine-{component}-pod"


def _everywhere(outcome: Outcome) -> tuple[Outcome, Outcome, Outcome]:
    """The same outcome for scoped_kubectl, shell and confined (the Row's positional order)."""
    return outcome, outcome, outcome


def _get(kind: str, name: str, group: str = "apps") -> Request:
    return req("get", kind, name, group)


# the spine chart's objects the rows use
MESSAGE, GATEWAY, REDIS = "spine-message", "spine-gateway", "spine-redis"

TABLE: tuple[Row, ...] = (
    # -- get ----------------------------------------------------------------------------------
    Row("get pods", (req("list", "pods"),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("list", "pods")),
    Row("get pod {pod:message}", (req("get", "pods", "{pod:message}"),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "pods", "{pod:message}")),
    Row("get configmap spine-message-config -o yaml", (req("get", "configmaps", "spine-message-config"),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "configmaps", "spine-message-config")),
    Row("get secrets", (req("list", "secrets"),), *_everywhere(deny("list", "secrets"))),
    Row("get replicasets", (req("list", "replicasets", "", "apps"),),
        scoped_kubectl=ALLOWED, shell=deny("list", "replicasets", "", "apps"),
        confined=deny("list", "replicasets", "", "apps")),
    Row("get nodes", (req("list", "nodes", namespace=""),), *_everywhere(deny("list", "nodes", namespace=""))),
    Row("get pods -n kube-system", (req("list", "pods", namespace="kube-system"),),
        *_everywhere(deny("list", "pods", namespace="kube-system"))),
    # -- describe (its events are optional: a denied list of them is skipped) ------------------
    Row("describe deployment spine-message", (_get("deployments", MESSAGE),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", MESSAGE, "apps")),
    # -- logs -----------------------------------------------------------------------------------
    Row("logs {pod:postgres}", (req("get", "pods", "{pod:postgres}"), req("get", "pods/log", "{pod:postgres}")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "pods", "{pod:postgres}")),
    Row("logs deployment/spine-message --tail=5",
        (_get("deployments", MESSAGE), req("list", "pods"), req("get", "pods/log", "{pod:message}")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", MESSAGE, "apps")),
    # -- patch ------------------------------------------------------------------------------------
    Row("patch configmap spine-message-config --type merge -p {\"data\":{\"DB_POOL_SIZE\":\"10\"}}",
        (req("patch", "configmaps", "spine-message-config"),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("patch", "configmaps", "spine-message-config")),
    Row("patch configmap spine-postgres-config --type merge -p {\"data\":{\"x\":\"y\"}}",
        (req("patch", "configmaps", "spine-postgres-config"),),
        *_everywhere(deny("patch", "configmaps", "spine-postgres-config"))),
    # -- set env, set image ---------------------------------------------------------------------
    Row("set env deployment/spine-gateway ARENAC_UNUSED-",
        (_get("deployments", GATEWAY), req("patch", "deployments", GATEWAY, "apps")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", GATEWAY, "apps")),
    Row("set image deployment/spine-message message=ghcr.io/arenac/spine:1.4.2",
        (_get("deployments", MESSAGE), req("patch", "deployments", MESSAGE, "apps")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", MESSAGE, "apps")),
    # -- rollout (undo: the broker does not carry it out, so no row) --------------------------------
    Row("rollout restart deployment/spine-gateway",
        (_get("deployments", GATEWAY), req("patch", "deployments", GATEWAY, "apps")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", GATEWAY, "apps")),
    Row("rollout restart statefulset/spine-postgres",
        (_get("statefulsets", "spine-postgres"), req("patch", "statefulsets", "spine-postgres", "apps")),
        scoped_kubectl=deny("patch", "statefulsets", "spine-postgres", "apps"),
        shell=deny("patch", "statefulsets", "spine-postgres", "apps"),
        confined=deny("get", "statefulsets", "spine-postgres", "apps")),
    Row("rollout status deployment/spine-message --timeout=30s",
        (_get("deployments", MESSAGE), req("list", "deployments", MESSAGE, "apps"),
         req("watch", "deployments", MESSAGE, "apps")),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("get", "deployments", MESSAGE, "apps")),
    # derived: history lists the ReplicaSets, which shell may not read (its Role has no replicasets)
    Row("rollout history deployment/spine-message",
        (_get("deployments", MESSAGE), req("list", "replicasets", "", "apps")),
        scoped_kubectl=ALLOWED, shell=deny("list", "replicasets", "", "apps"),
        confined=deny("get", "deployments", MESSAGE, "apps"), derived=True),
    # -- scale ------------------------------------------------------------------------------------
    Row("scale deployment/spine-message --replicas=1",
        (_get("deployments", MESSAGE), req("patch", "deployments/scale", MESSAGE, "apps")),
        scoped_kubectl=ALLOWED, shell=deny("patch", "deployments/scale", MESSAGE, "apps"),
        confined=deny("get", "deployments", MESSAGE, "apps")),
    Row("scale deployment/spine-redis --replicas=1",
        (_get("deployments", REDIS), req("patch", "deployments/scale", REDIS, "apps")),
        scoped_kubectl=deny("patch", "deployments/scale", REDIS, "apps"),
        shell=deny("patch", "deployments/scale", REDIS, "apps"),
        confined=deny("get", "deployments", REDIS, "apps")),
    # -- exec -------------------------------------------------------------------------------------
    Row("exec deployment/spine-message -- true",
        (_get("deployments", MESSAGE), req("list", "pods"), req("get", "pods", "{pod:message}"),
         req("create", "pods/exec", "{pod:message}")),
        scoped_kubectl=deny("create", "pods/exec", "{pod:message}"), shell=ALLOWED,
        confined=deny("get", "deployments", MESSAGE, "apps")),
    Row("exec {pod:postgres} -- true",
        (req("get", "pods", "{pod:postgres}"), req("create", "pods/exec", "{pod:postgres}")),
        scoped_kubectl=deny("create", "pods/exec", "{pod:postgres}"), shell=ALLOWED,
        confined=deny("get", "pods", "{pod:postgres}")),
    # -- delete pod -------------------------------------------------------------------------------
    Row("delete pod {pod:fanout}", (req("delete", "pods", "{pod:fanout}"),),
        scoped_kubectl=ALLOWED, shell=deny("delete", "pods", "{pod:fanout}"),
        confined=deny("delete", "pods", "{pod:fanout}")),
    # -- auth can-i (derived: the answers are the bundles' RBAC on the question asked; a
    #    subresource is asked with --subresource, as real kubectl reads `pods/exec` as a pod's name)
    Row("auth can-i patch configmaps/spine-message-config",
        (req("patch", "configmaps", "spine-message-config"),),
        scoped_kubectl=ALLOWED, shell=ALLOWED, confined=deny("patch", "configmaps", "spine-message-config"),
        question=True, derived=True),
    Row("auth can-i create pods --subresource=exec", (req("create", "pods/exec"),),
        scoped_kubectl=deny("create", "pods/exec"), shell=ALLOWED, confined=deny("create", "pods/exec"),
        question=True, derived=True),
    Row("auth can-i delete pods", (req("delete", "pods"),),
        scoped_kubectl=ALLOWED, shell=deny("delete", "pods"), confined=deny("delete", "pods"),
        question=True, derived=True),
    Row("auth can-i patch deployments.apps/spine-message --subresource=scale",
        (req("patch", "deployments/scale", MESSAGE, "apps"),),
        scoped_kubectl=ALLOWED, shell=deny("patch", "deployments/scale", MESSAGE, "apps"),
        confined=deny("patch", "deployments/scale", MESSAGE, "apps"), question=True, derived=True),
    Row("auth can-i list secrets", (req("list", "secrets"),), *_everywhere(deny("list", "secrets")),
        question=True, derived=True),
)


# -- the real cluster's side: `kubectl auth can-i` ------------------------------------------------
def can_i_argv(request: Request, application: str, *, as_user: str | None = None, kubeconfig: str | None = None,
               context: str | None = None) -> list[str]:
    """The `kubectl auth can-i` that asks a cluster about `request` (its placeholders filled):
    the resource qualified by its group (`deployments.apps`), the name after a slash, the
    subresource as `--subresource` (kubectl reads `pods/exec` as the pod named exec), the
    application namespace given as `application`, the cluster scope as `--all-namespaces`, and
    the agent as `--as=USER` (impersonation) or, without it, whoever `kubeconfig` authenticates."""
    if _POD.search(request.name):
        raise ValueError(f"{request}: fill its pod placeholders first")
    resource = f"{request.base}.{request.group}" if request.group else request.base
    argv = ["kubectl", "auth", "can-i", request.verb, f"{resource}/{request.name}" if request.name else resource]
    if request.subresource:
        argv.append(f"--subresource={request.subresource}")
    namespace = application if request.namespace == APPLICATION else request.namespace
    argv += ["--namespace", namespace] if namespace else ["--all-namespaces"]
    if as_user is not None:
        argv.append(f"--as={as_user}")
    if kubeconfig is not None:
        argv.append(f"--kubeconfig={kubeconfig}")
    if context is not None:
        argv.append(f"--context={context}")
    return argv


def can_i_answer(code: int, stdout: str) -> bool | None:
    """What `kubectl auth can-i` answered: True for "yes" (exit 0), False for "no" (exit 1; kubectl
    may add " - REASON"), None for anything else (an error: its stderr says why)."""
    words = stdout.split()
    if code == 0 and words[:1] == ["yes"]:
        return True
    if code == 1 and words[:1] == ["no"]:
        return False
    return None


# -- the profiles' RBAC, as the compiler renders it into bundles -----------------------------------
def compiled_profile_rbac(out: Path, tasks: Sequence[str] = RBAC_TASKS) -> dict[str, dict[str, list[bytes]]]:
    """profile -> bundle id -> the bytes of that bundle's `rbac/*.yaml` (sorted by file name), for
    every bundle the tasks compile to (written under `out`); a bundle's profile is its plan's
    `coordinates.access`."""
    # imported here: the live broker test imports this module, and needs no compiler
    from arenac.pipeline import compile_paths, write_bundles

    write_bundles(compile_paths([str(ROOT / task) for task in tasks]), out)
    found: dict[str, dict[str, list[bytes]]] = {}
    for plan in sorted(out.glob("*/*/plan.json")):
        profile = json.loads(plan.read_text())["coordinates"]["access"]
        found.setdefault(profile, {})[plan.parent.name] = [
            path.read_bytes() for path in sorted((plan.parent / "rbac").glob("*.yaml"))]
    return found
