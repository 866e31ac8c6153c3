"""A trial's two namespaces: created with their labels, deleted and waited for.

Contract:

- `create_trial_namespaces(api, trial, owner)` creates the application namespace, then the harness
  namespace (`names.trial_namespaces(trial)`), each with `names.labels(trial, role)` and the
  annotation `arenac.dev/owner: <owner>` (the runner's state, records.py). A namespace that already
  exists is this trial's, and kept, only if it carries `arenac.dev/trial: <trial>`, the same role
  and the same owner, and is not being deleted; otherwise `NamespaceTaken` names who holds it (another trial, or
  nothing of arenac's, or this trial's namespace still Terminating), and a namespace this call
  created before the refusal is deleted again (not waited for). Any other API error is `KubeError`.
- `delete_namespaces(api, names, timeout_s, poll_s)` deletes each namespace (one already gone is
  fine), then reads them every `poll_s` seconds until every one answers 404, for at most
  `timeout_s` seconds (monotonic clock): then `TeardownTimeout` names those still there with their
  phase (a namespace stuck Terminating: a finalizer that does not finish). Returns the names in
  the order given.
- Requests: POST/GET/DELETE on `/api/v1/namespaces[/NAME]` only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from arenac.runner.kube.api import KubeError, NamespaceTaken, TeardownTimeout, describe, k8s, status_of
from arenac.runner.kube.names import (
    OWNER,
    ROLE,
    TRIAL,
    Role,
    TrialNamespaces,
    held_by,
    namespace_body,
    trial_namespaces,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def create_trial_namespaces(api: ApiClient, trial: str, owner: str) -> TrialNamespaces:
    names = trial_namespaces(trial)
    core = k8s().CoreV1Api(api)
    created: list[str] = []
    try:
        for role, name in names.by_role():
            if _create(core, name, trial, role, owner):
                created.append(name)
    except KubeError:
        for name in created:
            try:
                core.delete_namespace(name)
            except Exception:  # the refusal is what the caller needs to hear; cleanup() gets the rest
                pass
        raise
    return names


def _create(core: Any, name: str, trial: str, role: Role, owner: str) -> bool:
    """Create one namespace; False when this trial's already exists (kept), raises when not."""
    try:
        core.create_namespace(namespace_body(name, trial, role, owner))
        return True
    except Exception as error:
        if status_of(error) != 409:
            raise KubeError(f"cannot create namespace {name}: {describe(error)}") from error
    try:
        existing = core.read_namespace(name)
    except Exception as error:
        raise KubeError(f"namespace {name} exists but cannot be read: {describe(error)}") from error
    found = existing.metadata.labels or {}
    holder = held_by(found)
    if holder is None:
        raise NamespaceTaken(f"namespace {name} already exists and is not arenac's (no {TRIAL} label): "
                             "refusing to use it")
    if holder != trial:
        raise NamespaceTaken(f"namespace {name} already exists and belongs to trial {holder}: "
                             f"refusing to use it for trial {trial}")
    if (existing.metadata.annotations or {}).get(OWNER) != owner:
        raise NamespaceTaken(f"namespace {name} of trial {trial} was created by another runner's state "
                             f"({OWNER}): refusing to share it")
    if found.get(ROLE) != role:
        raise NamespaceTaken(f"namespace {name} of trial {trial} has role {found.get(ROLE)}, not {role}")
    if existing.metadata.deletion_timestamp is not None:
        raise NamespaceTaken(f"namespace {name} of trial {trial} is still being deleted (Terminating): "
                             "wait for it, or use another trial id")
    return False


def delete_namespaces(api: ApiClient, names: Sequence[str], timeout_s: float = 300.0,
                      poll_s: float = 1.0) -> tuple[str, ...]:
    core = k8s().CoreV1Api(api)
    for name in names:
        try:
            core.delete_namespace(name)
        except Exception as error:
            if status_of(error) != 404:
                raise KubeError(f"cannot delete namespace {name}: {describe(error)}") from error
    deadline = time.monotonic() + timeout_s
    remaining = list(names)
    while True:
        phases = {}
        for name in remaining:
            try:
                status = core.read_namespace(name).status
                phases[name] = (status.phase if status is not None else None) or "no phase"
            except Exception as error:
                if status_of(error) != 404:
                    raise KubeError(f"cannot read namespace {name}: {describe(error)}") from error
        remaining = [name for name in remaining if name in phases]
        if not remaining:
            return tuple(names)
        if time.monotonic() >= deadline:
            still = ", ".join(f"{name} ({phases[name]})" for name in remaining)
            raise TeardownTimeout(f"namespaces still there {timeout_s:g} s after their deletion: {still}",
                                  tuple(remaining))
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))

