"""The agent's access to a trial's cluster: its RBAC, its short-lived token and kubeconfig, and
their revocation at the freeze.

Contract:

- `rbac_objects(documents, namespace)` reads the bundle's `rbac/*.yaml` documents (as pinned by
  runner/bundle.py: `RunnableBundle.rbac_bytes`) and returns them for the install's namespace:
  each object's `metadata.namespace` set to `namespace`, and each RoleBinding subject of kind
  ServiceAccount whose namespace was the object's own or empty set to it; ordered ServiceAccount,
  Role, RoleBinding, then by name. The bundles' rbac/ names no namespace (render/rbac.py: it is
  the install's); one compiled before that named `arenac`, and is moved the same way. The
  bundle's bytes are not touched. Exactly one ServiceAccount (the agent's) is required, and only those
  three kinds are accepted: anything else (a ClusterRole, a ClusterRoleBinding) raises `KubeError`,
  so nothing cluster-scoped is ever created.
- `apply_agent_rbac(api, documents, namespace)` creates those objects. It runs after the chart's
  install, which creates the agent's ServiceAccount too (`agent-serviceaccount.yaml`): a
  ServiceAccount that already exists is kept (`AppliedRbac.kept`); any other conflict or error
  raises `KubeError`.
- `token_seconds(agent_window_s, time_scale, margin_s)` is the token's requested lifetime: the
  agent's window in real seconds (plan seconds x time scale) plus the margin, rounded up, and at
  least 600 s, the shortest a TokenRequest may ask for.
- `request_agent_token(api, namespace, service_account, seconds)` asks the TokenRequest API
  (`POST .../serviceaccounts/NAME/token` with `spec.expirationSeconds` only: the audience is the
  API server's default). `AgentToken` holds what was granted (the server may shorten the
  lifetime: `expires_at` is its answer); its token never appears in a repr.
- `kubeconfig_text(server, ca_pem, token, namespace)` is the agent's kubeconfig: one cluster (the
  server, its CA as `certificate-authority-data` when given), one user (the token, no client
  certificate), one context (named after the application namespace, with it as the namespace),
  current. `write_agent_kubeconfig(api, token, path)` writes it with mode 0600 (core/serialize.py's
  `write_atomic`: the mode set before a byte is written, then renamed over the target), the
  server and CA taken from the runner's own connection; a connection that skips TLS verification
  is refused rather than passed on.
- `revoke_agent_access(api, namespace, service_account)` deletes every RoleBinding of the
  namespace that binds that ServiceAccount, then the ServiceAccount (which invalidates every token
  bound to it: the API server checks a bound token's ServiceAccount UID on each request). Already
  gone is not an error; `Revocation` records what was deleted. Idempotent.
"""

from __future__ import annotations

import base64
import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from arenac.core.serialize import write_atomic
from arenac.runner.kube.api import KubeError, describe, k8s, server_of, status_of

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

MIN_TOKEN_SECONDS = 600  # the TokenRequest API refuses expirationSeconds below 10 minutes
KINDS = ("ServiceAccount", "Role", "RoleBinding")


@dataclass(frozen=True)
class AppliedRbac:
    namespace: str
    service_account: str
    created: tuple[str, ...]  # "Kind/name", in the order created
    kept: tuple[str, ...]  # already there (the chart's ServiceAccount)


@dataclass(frozen=True)
class AgentToken:
    namespace: str
    service_account: str
    expiration_seconds: int  # what was asked for
    expires_at: str  # the API server's answer (RFC 3339)
    token: str = field(repr=False)


@dataclass(frozen=True)
class Revocation:
    namespace: str
    service_account: str
    role_bindings: tuple[str, ...]  # the RoleBindings deleted
    service_account_deleted: bool  # False: it was already gone


def rbac_objects(documents: Sequence[bytes], namespace: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for document in documents:
        for obj in yaml.safe_load_all(document):
            if obj is None:
                continue
            if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
                kind = obj.get("kind") if isinstance(obj, dict) else type(obj).__name__
                raise KubeError(f"the bundle's rbac/ holds a {kind}: only ServiceAccount, Role and RoleBinding "
                                "are applied (nothing cluster-scoped)")
            objects.append(_into(obj, namespace))
    accounts = [o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"]
    if len(accounts) != 1:
        raise KubeError(f"the bundle's rbac/ must hold exactly one ServiceAccount (the agent's), not {len(accounts)}")
    return sorted(objects, key=lambda o: (KINDS.index(o["kind"]), o["metadata"]["name"]))


def _into(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    moved = copy.deepcopy(obj)
    original = (obj.get("metadata") or {}).get("namespace")
    moved.setdefault("metadata", {})["namespace"] = namespace
    if moved["kind"] == "RoleBinding":
        for subject in moved.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount" and subject.get("namespace") in (original, None, ""):
                subject["namespace"] = namespace
    return moved


def apply_agent_rbac(api: ApiClient, documents: Sequence[bytes], namespace: str) -> AppliedRbac:
    objects = rbac_objects(documents, namespace)
    core, rbac = k8s().CoreV1Api(api), k8s().RbacAuthorizationV1Api(api)
    create = {"ServiceAccount": core.create_namespaced_service_account,
              "Role": rbac.create_namespaced_role,
              "RoleBinding": rbac.create_namespaced_role_binding}
    created: list[str] = []
    kept: list[str] = []
    for obj in objects:
        what = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            create[obj["kind"]](namespace, obj)
            created.append(what)
        except Exception as error:
            if status_of(error) == 409 and obj["kind"] == "ServiceAccount":
                kept.append(what)
                continue
            raise KubeError(f"cannot create {what} in {namespace}: {describe(error)}") from error
    account = next(o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount")
    return AppliedRbac(namespace, account, tuple(created), tuple(kept))


def token_seconds(agent_window_s: float, time_scale: float, margin_s: float = 300.0) -> int:
    return max(MIN_TOKEN_SECONDS, math.ceil(agent_window_s * time_scale + margin_s))


def request_agent_token(api: ApiClient, namespace: str, service_account: str, seconds: int) -> AgentToken:
    if seconds < MIN_TOKEN_SECONDS:
        raise KubeError(f"a token of {seconds} s: the TokenRequest API needs at least {MIN_TOKEN_SECONDS} s")
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    try:
        granted = k8s().CoreV1Api(api).create_namespaced_service_account_token(service_account, namespace, body)
    except Exception as error:
        raise KubeError(f"cannot get a token for ServiceAccount {service_account} in {namespace}: "
                        f"{describe(error)}") from error
    status = granted.status
    if status is None or not status.token:
        raise KubeError(f"the TokenRequest for {service_account} in {namespace} returned no token")
    expires = status.expiration_timestamp
    return AgentToken(namespace, service_account, seconds, expires.isoformat() if expires is not None else "",
                      status.token)


def kubeconfig_text(server: str, ca_pem: bytes | None, token: str, namespace: str) -> str:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": namespace, "cluster": cluster}],
        "users": [{"name": namespace, "user": {"token": token}}],
        "contexts": [{"name": namespace, "context": {"cluster": namespace, "user": namespace,
                                                     "namespace": namespace}}],
        "current-context": namespace,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def write_agent_kubeconfig(api: ApiClient, token: AgentToken, path: Path) -> Path:
    configuration = api.configuration
    if not configuration.verify_ssl:
        raise KubeError("the runner's own connection skips TLS verification: refusing to write the agent a "
                        "kubeconfig that does too")
    ca_pem = Path(configuration.ssl_ca_cert).read_bytes() if configuration.ssl_ca_cert else None
    text = kubeconfig_text(server_of(api), ca_pem, token.token, token.namespace)
    write_atomic(path, text, mode=0o600)
    return path


def revoke_agent_access(api: ApiClient, namespace: str, service_account: str) -> Revocation:
    core, rbac = k8s().CoreV1Api(api), k8s().RbacAuthorizationV1Api(api)
    try:
        bindings = rbac.list_namespaced_role_binding(namespace).items
    except Exception as error:
        raise KubeError(f"cannot list the RoleBindings of {namespace}: {describe(error)}") from error
    deleted: list[str] = []
    for binding in bindings:
        if not any(_is_agent(subject, namespace, service_account) for subject in binding.subjects or []):
            continue
        name = binding.metadata.name
        try:
            rbac.delete_namespaced_role_binding(name, namespace)
            deleted.append(name)
        except Exception as error:
            if status_of(error) != 404:
                raise KubeError(f"cannot delete RoleBinding {name} in {namespace}: {describe(error)}") from error
    try:
        core.delete_namespaced_service_account(service_account, namespace)
        account_deleted = True
    except Exception as error:
        if status_of(error) != 404:
            raise KubeError(f"cannot delete ServiceAccount {service_account} in {namespace}: "
                            f"{describe(error)}") from error
        account_deleted = False
    return Revocation(namespace, service_account, tuple(deleted), account_deleted)


def _is_agent(subject: Any, namespace: str, service_account: str) -> bool:
    return bool(subject.kind == "ServiceAccount" and subject.name == service_account
                and (subject.namespace or namespace) == namespace)
