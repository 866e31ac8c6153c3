"""Which trials are live on a cluster, what an interrupted run left there, and its cleanup: the
Kubernetes backend's counterpart of state.py's records (PIDs there, namespaces here).

Contract:

- `TrialRecords(root)` keeps one record per live trial, `<root>/<trial>.json` (a `TrialRecord`:
  the runner's PID and start time, the API server and kubeconfig context, the trial's namespaces),
  under the runner's state directory by default (`<state>/kube`: state.py's `StateDir`, so
  `$ARENAC_STATE_DIR` moves both). `register` must come before the trial's namespaces are created
  and `unregister` only after they are deleted, so a namespace that exists is always either a live
  trial's or a leftover. A trial is live while its record's runner runs (state.py's
  `identity_alive`: the same PID with the same start time, not a zombie).
- `owner()` is the state directory's id (16 hex digits, made once, kept in `<root>/owner`): the
  namespaces a runner creates carry it as the annotation `arenac.dev/owner`, so that two machines,
  or two state directories, sharing a cluster never take each other's trials for leftovers.
- `leftovers(api, records)` lists the namespaces labelled `app.kubernetes.io/managed-by=arenac`
  (the selector is sent, and checked again on the answer) whose owner annotation is this state
  directory's and whose `arenac.dev/trial` is not live: a record whose runner is gone, or no
  record at all. Namespaces of another owner, or none, are never listed.
- `cleanup(api, records, timeout_s, poll_s)` deletes the leftovers and waits for them
  (namespaces.delete_namespaces: bounded, `TeardownTimeout`), then removes the records of dead
  runners on this API server; a dead runner's record for another server is kept (its cluster is
  not the one connected to) and said so. Returns one line per thing done, for the runner to print.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from arenac.core.serialize import write_atomic
from arenac.model.base import Model
from arenac.runner.kube.api import KubeError, describe, k8s, server_of
from arenac.runner.kube.names import MANAGED_BY, MANAGER, OWNER, ROLE, check_trial_id, held_by
from arenac.runner.kube.namespaces import delete_namespaces
from arenac.runner.state import StateDir, identity_alive, process_identity

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class RunnerIdentity(Model):
    pid: int
    started: float


class TrialRecord(Model):
    trial: str
    runner: RunnerIdentity
    server: str
    context: str | None
    namespaces: tuple[str, ...]

    def live(self) -> bool:
        return identity_alive(self.runner.model_dump())


@dataclass(frozen=True)
class Leftover:
    namespace: str
    trial: str
    role: str
    why: str


@dataclass(frozen=True)
class TrialRecords:
    root: Path

    @classmethod
    def default(cls) -> TrialRecords:
        return cls(StateDir.default().root / "kube")

    def owner(self) -> str:
        path = self.root / "owner"
        try:
            return path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                with open(path, "x", encoding="utf-8") as out:  # the first runner to get here makes it
                    out.write(secrets.token_hex(8))
            except FileExistsError:
                pass
            return path.read_text(encoding="utf-8").strip()

    def register(self, trial: str, server: str, context: str | None, namespaces: tuple[str, ...]) -> TrialRecord:
        identity = process_identity(os.getpid())
        assert identity is not None  # this very process runs
        record = TrialRecord(trial=check_trial_id(trial), runner=RunnerIdentity(**identity), server=server,
                             context=context, namespaces=namespaces)
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(self.root / f"{trial}.json", record.model_dump_json(indent=1))
        return record

    def unregister(self, trial: str) -> None:
        (self.root / f"{check_trial_id(trial)}.json").unlink(missing_ok=True)

    def records(self) -> list[TrialRecord]:
        found = []
        for path in sorted(self.root.glob("*.json")):
            try:
                found.append(TrialRecord.model_validate(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, ValidationError):
                continue  # half-written by a runner killed mid-write: write_atomic makes that rare
        return found

    def live_trials(self) -> set[str]:
        return {record.trial for record in self.records() if record.live()}


def leftovers(api: ApiClient, records: TrialRecords) -> list[Leftover]:
    owner, live = records.owner(), records.live_trials()
    recorded = {record.trial for record in records.records()}
    try:
        listed = k8s().CoreV1Api(api).list_namespace(label_selector=f"{MANAGED_BY}={MANAGER}").items
    except Exception as error:
        raise KubeError(f"cannot list arenac's namespaces: {describe(error)}") from error
    found = []
    for namespace in listed:
        labels = namespace.metadata.labels or {}
        annotations = namespace.metadata.annotations or {}
        trial = held_by(labels)
        if trial is None or annotations.get(OWNER) != owner or trial in live:
            continue
        why = "its runner is gone" if trial in recorded else "no record of its trial"
        found.append(Leftover(namespace.metadata.name, trial, labels.get(ROLE, "?"), why))
    return sorted(found, key=lambda leftover: leftover.namespace)


def cleanup(api: ApiClient, records: TrialRecords, timeout_s: float = 300.0, poll_s: float = 1.0) -> list[str]:
    found = leftovers(api, records)
    lines = [f"deleted namespace {leftover.namespace} (trial {leftover.trial}, {leftover.role}: {leftover.why})"
             for leftover in found]
    delete_namespaces(api, [leftover.namespace for leftover in found], timeout_s, poll_s)
    server = server_of(api)
    for record in records.records():
        if record.live():
            continue
        if record.server == server:
            records.unregister(record.trial)
            lines.append(f"removed the record of trial {record.trial} (its runner is gone)")
        else:
            lines.append(f"kept the record of trial {record.trial}: its runner is gone, but its namespaces are on "
                         f"{record.server}, not {server}; run the cleanup against that cluster")
    return lines
