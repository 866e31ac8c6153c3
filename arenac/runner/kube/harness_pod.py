"""The harness pod: one per trial, in the trial's harness namespace, running `arenac harness episode`
beside the substrate the chart installed in the application namespace (docs/kubernetes.md, "The
harness pod"). The runner creates it and what it needs from its own code, not from the bundle's
chart: they hold the trial's own broker token, the substrate's credentials as the install made
them, and the bundle itself, which a chart rendered from the bundle alone cannot know.

Contract:

- `read_substrate_credentials(api, application, secrets)` reads, with the caller's (the runner's)
  credentials, exactly the keys `secrets` names (the driver's `cluster_credentials`: the keys its
  `cluster_endpoints` reads) from the substrate chart's Secrets in the application namespace. A
  Secret or key missing, a value that is not UTF-8, or a key in two Secrets raises `KubeError`
  naming the Secret and key, never a value. `SubstrateCredentials` never shows a value in its repr.
- `harness_pod_objects(spec)` is the list of objects the runner creates for the pod (`HarnessPodSpec`:
  the bundle, the trial's namespaces, the chart's `InstallPlan`, the image, the time scale, the broker's
  port and token, the copied credentials, who may reach the broker, where the API server answers),
  deterministic: the same spec gives the same objects, whose JSON (sorted keys) is byte-identical.
  In creation order (Helm's install order by kind, then namespace and name):
  - NetworkPolicy `arenac-harness-episode` (harness namespace, the pod only): ingress on the broker
    port from `agent_peers` only (none given: no ingress rule, so only a port-forward, which no
    NetworkPolicy sees, reaches it); egress to the application namespace, to the cluster's DNS
    (kube-system's `k8s-app: kube-dns` pods, port 53) and to the API server's endpoints
    (`api_server`, required: the pod calls the API), nothing else.
  - ServiceAccount `arenac-harness-episode` (harness namespace; `automountServiceAccountToken:
    false` on the account: only this pod asks for a token, below). Not the chart's
    `arenac-harness`, which the load generator and the grader run as, and which keeps no rights.
  - Secret `arenac-broker-token` (key `token`) and Secret `arenac-substrate-credentials` (the copied
    keys), both immutable, in the harness namespace.
  - ConfigMap `arenac-bundle` (immutable): every file of the bundle's manifest and `manifest.json`,
    one key each (the path with `/` spelt `__`), as `data` when the bytes are UTF-8 and as
    `binaryData` otherwise. Above Kubernetes' 1 MiB (the values' bytes, as the API server counts
    them) it raises `KubeError` naming the size and the largest files; a path that cannot be a key
    (or two that map to one) too. The bytes are those the manifest pins (each file's sha256 checked
    as it is read, the manifest's digest the opened bundle's).
  - Role and RoleBinding `arenac-harness-episode` in the APPLICATION namespace, binding the
    ServiceAccount above; the rules (`HarnessPodObjects.rules`, each with why) are the episode's
    needs there and nothing more, which are exactly the calls of the episode's cluster backend
    (pod_backend.py): `get` of the ConfigMaps a snapshot records, by name; `list` of pods (readiness,
    the watch of the parts, a restart target's kind); `get` and `patch` of the plan's restart
    targets, by name, of their kind (none without a restart challenge). A restart target or snapshot
    ConfigMap the chart does not create raises `KubeError`.
  - Service `arenac-broker` (harness namespace, ClusterIP): the broker port only, to the pod, whose
    address it lists only once the pod is ready (the handover: the readiness probe below).
  - Pod `arenac-harness-episode` (restartPolicy Never; why not a Job: docs/kubernetes.md) running
    `arenac harness episode /bundle --listen 0.0.0.0:PORT --token-file /etc/arenac/broker/token
    --run-dir /var/arenac/episode --time-scale S --target-namespace APPLICATION --credentials
    /etc/arenac/credentials` (the cluster backend, pod_backend.py), readiness `arenac harness status --run-dir
    /var/arenac/episode --handed-over`; uid/gid 10002 (the image's user), non-root, no privilege
    escalation, every capability dropped, the RuntimeDefault seccomp profile, a read-only root
    filesystem with emptyDirs for `/var/arenac` and `/tmp`; requests and limits `HarnessResources`;
    the bundle mounted read-only at `/bundle` one top-level entry at a time (`subPath`: a ConfigMap
    volume mounted whole holds Kubernetes' `..data` links and a timestamped directory, which
    `arenac verify-bundle` would report as files not in the manifest), the token at
    `/etc/arenac/broker`, the credentials at `/etc/arenac/credentials` (`$ARENAC_CREDENTIALS`, the
    path `cluster_endpoints`' reader takes), all read-only, files 0440 to the pod's group;
    `automountServiceAccountToken: true`, as the restart challenge and the ConfigMap snapshots call
    the API; `activeDeadlineSeconds` when `deadline_s` is given.
  Every object carries `names.labels(trial, "harness")` and `app.kubernetes.io/name:
  arenac-harness-episode`. Nothing cluster-scoped; nothing outside the trial's two namespaces.
  The token and the credentials are only in the Secrets' bodies, never in a repr or a message.
- `api_server_endpoints(api)` reads where the API server answers from inside the cluster (the
  `kubernetes` Service's Endpoints in `default`; a read with the runner's credentials), for
  `HarnessPodSpec.api_server`. `open_for_harness(directory)` opens a bundle as the episode will
  (its manifest checked), a refusal as `KubeError`; `spec_digest(objects)` is the sha256 of the
  objects' canonical JSON.
- `create_harness_pod(api, objects, timeout_s)` creates them in that order (the NetworkPolicy before
  anything runs, RBAC, Secrets and the ConfigMap before the Pod); the first API error raises
  `HarnessPodFailed` (an `InstallFailed`) naming the object and carrying what was created. Nothing is
  cleaned up here: `install.uninstall` deletes every kind created here (it lists both namespaces).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenac.bundle import MANIFEST, sha256
from arenac.runner.bundle import BundleRefused, RunnableBundle, open_bundle
from arenac.runner.kube.api import KubeError, describe, k8s, status_of
from arenac.runner.kube.install import INSTALL_ORDER, InstallFailed, InstallPlan, PlacedObject, create_objects
from arenac.runner.kube.names import TrialNamespaces, labels
from arenac.substrate.interface import SecretKeys
from arenac.substrate.registry import driver_for

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

NAME = "arenac-harness-episode"  # the pod, its ServiceAccount, Role, RoleBinding and NetworkPolicy
BUNDLE_CONFIG_MAP = "arenac-bundle"
TOKEN_SECRET = "arenac-broker-token"
CREDENTIALS_SECRET = "arenac-substrate-credentials"
SERVICE = "arenac-broker"
CONTAINER = "episode"
APP_LABEL = "app.kubernetes.io/name"
BUNDLE_DIR = "/bundle"
TOKEN_DIR = "/etc/arenac/broker"
TOKEN_FILE = f"{TOKEN_DIR}/token"
CREDENTIALS_DIR = "/etc/arenac/credentials"  # the harness commands' default (`--credentials`, $ARENAC_CREDENTIALS)
STATE_DIR = "/var/arenac"  # an emptyDir: the run directory is made inside it (the episode chmods it 0700)
RUN_DIR = f"{STATE_DIR}/episode"
USER_ID = 10002  # the harness image's user (docker/harness.Dockerfile)
DEFAULT_PORT = 7400
# Kubernetes refuses a ConfigMap whose values (data and binaryData) exceed 1 MiB in all
# (ValidateConfigMap: the sum of the values' lengths against MaxSecretSize)
MAX_CONFIG_MAP_BYTES = 1024 * 1024
_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")  # a ConfigMap key (IsConfigMapKey)
_NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the label the API server sets on every namespace
SECRET_MODE = 0o440  # read by the pod's group (fsGroup), by no one else
FILE_MODE = 0o644  # the bundle's non-executable files, as the manifest records them


class HarnessPodFailed(InstallFailed):
    """An object of the harness pod could not be created (`created`: what was, before it)."""


@dataclass(frozen=True)
class SubstrateCredentials:
    """The keys copied from the substrate's Secrets; the values never appear in a repr."""

    sources: tuple[SecretKeys, ...]
    values: tuple[tuple[str, str], ...] = field(repr=False)  # (key, value), sorted by key


@dataclass(frozen=True)
class PodsIn:
    """A NetworkPolicy peer: the pods of a namespace (those with `pod_labels`, or all of them)."""

    namespace: str
    pod_labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class IpBlock:
    """A NetworkPolicy peer: addresses (an agent outside the cluster, behind its node's address)."""

    cidr: str


Peer = PodsIn | IpBlock


@dataclass(frozen=True)
class ApiServerEndpoint:
    """Where the API server answers from inside the cluster, after the `kubernetes` Service's
    translation (what a NetworkPolicy sees): `kubectl get endpoints kubernetes -n default`."""

    cidr: str  # one address: `10.0.0.1/32`
    port: int  # 6443 on kind and kubeadm, 443 on some managed clusters


@dataclass(frozen=True)
class HarnessResources:
    """The pod's requests and limits. The requests are the chart's harness namespace today (the
    load generator's 200m/128Mi and the grader's 50m/64Mi, arenac/k8s/capacity.py's figures for the
    harness), whose work the episode does, so a trial's requests stay what the capacity model
    counts. The limits are bounds against a runaway, not measurements: the CPU limit is generous
    because throttling the load generator would show as the substrate's latency."""

    cpu_request: str = "250m"
    memory_request: str = "192Mi"
    cpu_limit: str = "2"
    memory_limit: str = "1Gi"
    state_size: str = "1Gi"  # the run directory's emptyDir
    tmp_size: str = "512Mi"  # the episode's scratch directory (tempfile)


@dataclass(frozen=True)
class RoleRule:
    """One rule of the harness's Role in the application namespace, and why the episode needs it."""

    api_group: str
    resource: str
    verbs: tuple[str, ...]
    names: tuple[str, ...]  # resourceNames; () only for a verb that cannot name (list)
    why: str

    def manifest(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"apiGroups": [self.api_group], "resources": [self.resource], "verbs": list(self.verbs)}
        if self.names:
            rule["resourceNames"] = list(self.names)
        return rule


@dataclass(frozen=True)
class HarnessPodSpec:
    bundle: RunnableBundle
    names: TrialNamespaces
    install: InstallPlan  # the chart as installed (install.install_plan): what the Role may name
    image: str
    time_scale: float
    credentials: SubstrateCredentials
    api_server: tuple[ApiServerEndpoint, ...]
    broker_token: str = field(repr=False)
    agent_peers: tuple[Peer, ...] = ()
    port: int = DEFAULT_PORT
    resources: HarnessResources = HarnessResources()
    deadline_s: int | None = None  # the pod's activeDeadlineSeconds: the trial's bound, when given
    healthy: bool = False  # the healthy control: the install left the faults out, the episode injects none


@dataclass(frozen=True)
class HarnessPodObjects:
    objects: tuple[PlacedObject, ...]  # in creation order
    rules: tuple[RoleRule, ...]  # the Role's, with why

    def keys(self) -> tuple[str, ...]:
        return tuple(o.key for o in self.objects)


def read_substrate_credentials(api: ApiClient, application: str,
                               secrets: Sequence[SecretKeys]) -> SubstrateCredentials:
    core = k8s().CoreV1Api(api)
    found: dict[str, str] = {}
    where: dict[str, str] = {}
    for wanted in secrets:
        try:
            secret = core.read_namespaced_secret(wanted.secret, application)
        except Exception as error:
            why = "not there" if status_of(error) == 404 else describe(error)
            raise KubeError(f"cannot read Secret {application}/{wanted.secret} for the harness: {why}") from error
        data = secret.data or {}
        missing = [key for key in wanted.keys if key not in data]
        if missing:
            raise KubeError(f"Secret {application}/{wanted.secret} lacks {', '.join(missing)}: the harness's "
                            "credentials cannot be copied")
        for key in wanted.keys:
            if key in where:
                raise KubeError(f"the key {key} is in Secrets {where[key]} and {wanted.secret}: one volume of "
                                "files cannot hold both")
            try:
                found[key] = base64.b64decode(data[key], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError) as error:
                raise KubeError(f"Secret {application}/{wanted.secret}: {key} is not UTF-8 text "
                                f"({type(error).__name__})") from None
            where[key] = wanted.secret
    return SubstrateCredentials(tuple(secrets), tuple(sorted(found.items())))


def harness_pod_objects(spec: HarnessPodSpec) -> HarnessPodObjects:
    _check(spec)
    names = spec.names
    meta_labels = {**labels(names.trial, "harness"), APP_LABEL: NAME}
    selector = {APP_LABEL: NAME, "arenac.dev/trial": names.trial}
    files = _bundle_files(spec.bundle)
    rules = role_rules(spec.bundle, spec.install)
    bodies: list[dict[str, Any]] = [
        _network_policy(spec, meta_labels, selector),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, names.harness, meta_labels),
         "automountServiceAccountToken": False},
        _secret(TOKEN_SECRET, names.harness, meta_labels, {"token": spec.broker_token}),
        _secret(CREDENTIALS_SECRET, names.harness, meta_labels, dict(spec.credentials.values)),
        _bundle_config_map(files, names.harness, meta_labels),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": _meta(NAME, names.application, meta_labels), "rules": [r.manifest() for r in rules]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": _meta(NAME, names.application, meta_labels),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": names.harness}]},
        {"apiVersion": "v1", "kind": "Service", "metadata": _meta(SERVICE, names.harness, meta_labels),
         "spec": {"type": "ClusterIP", "selector": selector, "publishNotReadyAddresses": False,
                  "ports": [{"name": "broker", "port": spec.port, "targetPort": "broker", "protocol": "TCP"}]}},
        _pod(spec, meta_labels, files),
    ]
    placed = [PlacedObject(b["kind"], b["metadata"]["namespace"], b["metadata"]["name"], b) for b in bodies]
    ordered = sorted(placed, key=lambda o: (INSTALL_ORDER.index(o.kind), o.namespace, o.name))
    return HarnessPodObjects(tuple(ordered), rules)


def create_harness_pod(api: ApiClient, objects: HarnessPodObjects, timeout_s: float = 60.0) -> tuple[str, ...]:
    return create_objects(api, objects.objects, timeout_s, "the harness pod's creation", failed=HarnessPodFailed)


def role_rules(bundle: RunnableBundle, install: InstallPlan) -> tuple[RoleRule, ...]:
    """The harness's rights in the application namespace, from the plan and the chart as installed."""
    driver = driver_for(bundle.plan.substrate)
    app = install.application
    placed = {(o.kind, o.name) for o in install.objects if o.namespace == app}
    # the workloads' ConfigMaps a snapshot records (runner/snapshot.py `configmaps`: every service's and Redis's)
    config_maps = sorted(f"{driver.name}-{component}-config" for component in (*driver.services, "redis"))
    absent = [name for name in config_maps if ("ConfigMap", name) not in placed]
    restart: dict[str, list[str]] = {"Deployment": [], "StatefulSet": []}
    for service in bundle.plan.challenges.restart:
        name = f"{driver.name}-{service}"
        target = next((k for k in restart if (k, name) in placed), None)
        if target is None:
            absent.append(f"a Deployment or StatefulSet {name} (the restart challenge's {service})")
        else:
            restart[target].append(name)
    if absent:
        raise KubeError(f"the chart installed in {app} has no {', '.join(absent)}: the harness's Role would name "
                        "what is not there")
    rules = [
        RoleRule("", "configmaps", ("get",), tuple(config_maps),
                 "the snapshots record what each workload's ConfigMap holds (its next start reads it): "
                 "read by name, the ConfigMaps' names are the chart's"),
        RoleRule("", "pods", ("list",), (),
                 "which pods run: the substrate's readiness, a lost part, the agent's pod replacements, a "
                 "restart target's kind (its pods' owners) and what a restarted workload waits on; pod names "
                 "are generated, so a list (no name can restrict it), never a get or a watch"),
    ]
    for kind, resource in (("Deployment", "deployments"), ("StatefulSet", "statefulsets")):
        # the other workloads are never read: readiness and the watch of the parts go by the pods
        # (pod_backend.py, pod_watch.py), and only a restarted workload's rollout is waited on
        if restart[kind]:
            rules.append(RoleRule("apps", resource, ("get", "patch"), tuple(sorted(set(restart[kind]))),
                                  "the restart challenge, a rollout restart (the pod template's restartedAt "
                                  "annotation, workloads.restart_workload), then its rollout's status read until "
                                  "it is done: only the plan's restart targets"))
    return tuple(rules)


def bundle_key(path: str) -> str:
    """A bundle path's ConfigMap key: `/` spelt `__` (a key cannot hold `/`; the volume's items put
    each key back at its path)."""
    return path.replace("/", "__")


@dataclass(frozen=True)
class _File:
    path: str
    data: bytes = field(repr=False)
    mode: int


def _bundle_files(bundle: RunnableBundle) -> tuple[_File, ...]:
    directory = bundle.directory
    try:
        manifest_bytes = (directory / MANIFEST).read_bytes()
        manifest = json.loads(manifest_bytes)
        artefacts = [(str(a["path"]), str(a["sha256"]), str(a.get("mode") or "0644")) for a in manifest["artefacts"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise KubeError(f"{directory}: cannot read its {MANIFEST} ({type(error).__name__})") from error
    if manifest.get("bundle_digest") != bundle.bundle_digest:
        raise KubeError(f"{directory}: its {MANIFEST} changed since the bundle was opened")
    files = [_File(MANIFEST, manifest_bytes, FILE_MODE)]
    for path, digest, mode in artefacts:
        try:
            data = (directory / path).read_bytes()
        except OSError as error:
            raise KubeError(f"{directory}: cannot read {path}: {error.strerror or error}") from error
        if sha256(data) != digest:  # what is shipped is what the manifest pins
            raise KubeError(f"{directory}: {path} is not what its manifest pins (altered since it was opened)")
        files.append(_File(path, data, int(mode, 8)))
    return tuple(sorted(files, key=lambda f: f.path))


def _bundle_config_map(files: Sequence[_File], namespace: str, meta_labels: dict[str, str]) -> dict[str, Any]:
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    keys: dict[str, str] = {}
    size = 0
    for f in files:
        key = bundle_key(f.path)
        if not _KEY.fullmatch(key) or any(part in ("", ".", "..") for part in f.path.split("/")):
            raise KubeError(f"the bundle's {f.path} cannot be a ConfigMap key and a volume path ({key!r})")
        if key in keys:
            raise KubeError(f"the bundle's {keys[key]} and {f.path} would share the ConfigMap key {key}")
        keys[key] = f.path
        size += len(f.data)
        try:
            data[key] = f.data.decode("utf-8")
        except UnicodeDecodeError:
            binary[key] = base64.b64encode(f.data).decode("ascii")
    if size > MAX_CONFIG_MAP_BYTES:
        largest = ", ".join(f"{f.path} ({len(f.data)} bytes)"
                            for f in sorted(files, key=lambda f: (-len(f.data), f.path))[:3])
        raise KubeError(f"the bundle is {size} bytes, above the {MAX_CONFIG_MAP_BYTES} bytes (1 MiB) a ConfigMap "
                        f"may hold: it cannot be mounted into the harness pod (largest: {largest})")
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": _meta(BUNDLE_CONFIG_MAP, namespace, meta_labels), "immutable": True,
                            "data": data}
    if binary:
        body["binaryData"] = binary
    return body


def _bundle_volume(files: Sequence[_File]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    items = []
    for f in files:
        item: dict[str, Any] = {"key": bundle_key(f.path), "path": f.path}
        if f.mode != FILE_MODE:  # the verifier's and the oracle's scripts: 0755, as the manifest checks
            item["mode"] = f.mode
        items.append(item)
    volume = {"name": "bundle", "configMap": {"name": BUNDLE_CONFIG_MAP, "defaultMode": FILE_MODE, "items": items}}
    # one mount per top-level entry, each a subPath: the volume's own root holds `..data` and a
    # timestamped directory beside symlinks, which the bundle's check would count as files not in its
    # manifest; a subPath mount is the entry itself, resolved (a real directory or file)
    tops = sorted({f.path.split("/", 1)[0] for f in files})
    mounts = [{"name": "bundle", "mountPath": f"{BUNDLE_DIR}/{top}", "subPath": top, "readOnly": True} for top in tops]
    return volume, mounts


def _pod(spec: HarnessPodSpec, meta_labels: dict[str, str], files: Sequence[_File]) -> dict[str, Any]:
    resources = spec.resources
    bundle_volume, bundle_mounts = _bundle_volume(files)
    container = {
        "name": CONTAINER,
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        # the episode's cluster backend (pod_backend.py), against the substrate in the application namespace
        "args": ["harness", "episode", BUNDLE_DIR, "--listen", f"0.0.0.0:{spec.port}", "--token-file", TOKEN_FILE,
                 "--run-dir", RUN_DIR, "--time-scale", repr(float(spec.time_scale)),
                 "--target-namespace", spec.names.application, "--credentials", CREDENTIALS_DIR,
                 *(["--healthy"] if spec.healthy else [])],
        "env": [{"name": "ARENAC_CREDENTIALS", "value": CREDENTIALS_DIR},
                {"name": "HOME", "value": "/tmp"}, {"name": "TMPDIR", "value": "/tmp"}],
        "ports": [{"name": "broker", "containerPort": spec.port, "protocol": "TCP"}],
        # ready = the episode handed over to the agent (exit 0 from then on; 1 before; 2 ended before it)
        "readinessProbe": {"exec": {"command": ["arenac", "harness", "status", "--run-dir", RUN_DIR, "--handed-over"]},
                           "periodSeconds": 2, "timeoutSeconds": 10, "successThreshold": 1, "failureThreshold": 1},
        "resources": {"requests": {"cpu": resources.cpu_request, "memory": resources.memory_request},
                      "limits": {"cpu": resources.cpu_limit, "memory": resources.memory_limit}},
        "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [*bundle_mounts,
                         {"name": "broker-token", "mountPath": TOKEN_DIR, "readOnly": True},
                         {"name": "credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True},
                         {"name": "state", "mountPath": STATE_DIR},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    pod_spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        # the restart challenge and the ConfigMap snapshots call the API as this account (its Role)
        "automountServiceAccountToken": True,
        "restartPolicy": "Never",  # a second episode on a substrate the first one changed would not be a trial
        "enableServiceLinks": False,  # the episode reaches the substrate by DNS name, not by injected variables
        "terminationGracePeriodSeconds": 60,  # SIGTERM: the episode tears down and grades as infra_error
        "securityContext": {"runAsNonRoot": True, "runAsUser": USER_ID, "runAsGroup": USER_ID, "fsGroup": USER_ID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [bundle_volume,
                    {"name": "broker-token", "secret": {"secretName": TOKEN_SECRET, "defaultMode": SECRET_MODE}},
                    {"name": "credentials", "secret": {"secretName": CREDENTIALS_SECRET, "defaultMode": SECRET_MODE}},
                    {"name": "state", "emptyDir": {"sizeLimit": resources.state_size}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": resources.tmp_size}}],
    }
    if spec.deadline_s is not None:
        pod_spec["activeDeadlineSeconds"] = spec.deadline_s
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(NAME, spec.names.harness, meta_labels),
            "spec": pod_spec}


def _network_policy(spec: HarnessPodSpec, meta_labels: dict[str, str], selector: dict[str, str]) -> dict[str, Any]:
    ingress = ([{"from": [_peer(p) for p in spec.agent_peers], "ports": [{"protocol": "TCP", "port": spec.port}]}]
               if spec.agent_peers else [])
    by_port: dict[int, list[str]] = {}
    for endpoint in spec.api_server:
        by_port.setdefault(endpoint.port, []).append(endpoint.cidr)
    egress: list[dict[str, Any]] = [
        {"to": [{"namespaceSelector": {"matchLabels": {_NAMESPACE_NAME: spec.names.application}}}]},
        {"to": [{"namespaceSelector": {"matchLabels": {_NAMESPACE_NAME: "kube-system"}},
                 "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        *({"to": [{"ipBlock": {"cidr": cidr}} for cidr in sorted(set(cidrs))],
           "ports": [{"protocol": "TCP", "port": port}]} for port, cidrs in sorted(by_port.items())),
    ]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _meta(NAME, spec.names.harness, meta_labels),
            "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress", "Egress"],
                     "ingress": ingress, "egress": egress}}


def _peer(peer: Peer) -> dict[str, Any]:
    if isinstance(peer, IpBlock):
        return {"ipBlock": {"cidr": peer.cidr}}
    return {"namespaceSelector": {"matchLabels": {_NAMESPACE_NAME: peer.namespace}},
            "podSelector": {"matchLabels": dict(sorted(peer.pod_labels))}}


def _secret(name: str, namespace: str, meta_labels: dict[str, str], values: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": True,
            "metadata": _meta(name, namespace, meta_labels),
            "data": {key: base64.b64encode(value.encode("utf-8")).decode("ascii")
                     for key, value in sorted(values.items())}}


def _meta(name: str, namespace: str, meta_labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(meta_labels)}


def _check(spec: HarnessPodSpec) -> None:
    names, install = spec.names, spec.install
    problems = []
    if (install.application, install.harness) != (names.application, names.harness):
        problems.append(f"the install is into {install.application} and {install.harness}, not the trial's "
                        f"{names.application} and {names.harness}")
    if not 0 < spec.port < 65536:
        problems.append(f"port {spec.port} is not a TCP port")
    if not spec.time_scale > 0:
        problems.append(f"time scale {spec.time_scale} is not positive")
    if not spec.image.strip():
        problems.append("no image")
    if not spec.broker_token or any(c.isspace() for c in spec.broker_token):
        problems.append("the broker's token must be one non-empty word")
    if not spec.api_server:
        problems.append("no API server endpoint: the pod calls the API (restart, snapshots), and its egress "
                        "is closed to anything not named")
    if not spec.credentials.values:
        problems.append("no substrate credentials")
    if spec.deadline_s is not None and spec.deadline_s <= 0:
        problems.append(f"deadline {spec.deadline_s} s is not positive")
    if problems:
        raise KubeError("the harness pod is not made: " + "; ".join(problems))


def open_for_harness(directory: Path) -> RunnableBundle:
    """The bundle, checked against its manifest as the episode will check it (`open_bundle`)."""
    try:
        return open_bundle(directory)
    except BundleRefused as error:
        raise KubeError(str(error)) from error


def spec_digest(objects: HarnessPodObjects) -> str:
    """sha256 of the objects' canonical JSON (sorted keys): equal for equal specs."""
    text = json.dumps([o.body for o in objects.objects], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def api_server_endpoints(api: ApiClient) -> tuple[ApiServerEndpoint, ...]:
    """The API server's endpoints as the pods of the cluster reach it (the `kubernetes` Service's
    Endpoints in `default`, read with the runner's credentials): the harness pod's egress to the API."""
    try:
        endpoints = k8s().CoreV1Api(api).read_namespaced_endpoints("kubernetes", "default")
    except Exception as error:
        raise KubeError(f"cannot read the API server's endpoints (default/kubernetes): {describe(error)}") from error
    found = set()
    for subset in endpoints.subsets or []:
        ports = [p.port for p in subset.ports or [] if (p.protocol or "TCP") == "TCP"]
        for address in subset.addresses or []:
            suffix = "/128" if ":" in address.ip else "/32"
            found |= {ApiServerEndpoint(address.ip + suffix, int(port)) for port in ports}
    if not found:
        raise KubeError("the API server's Service (default/kubernetes) lists no endpoints")
    return tuple(sorted(found, key=lambda e: (e.cidr, e.port)))
