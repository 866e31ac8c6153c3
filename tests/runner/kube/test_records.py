"""The live-trial records and the cleanup of what an interrupted run left, on a fake Kubernetes API
(kmock's in-memory emulator, not a cluster: tests/helpers/fake_kube.py)."""

from __future__ import annotations

import json
import os

from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.records import Leftover, cleanup, leftovers
from helpers.fake_kube import NAMESPACES


def _dead_runner_record(records, trial: str, server: str, namespaces: list[str]) -> None:
    """A record as a runner killed mid-trial leaves it: this PID, but another start time (so a
    process that is not that runner)."""
    records.root.mkdir(parents=True, exist_ok=True)
    (records.root / f"{trial}.json").write_text(json.dumps({
        "trial": trial, "runner": {"pid": os.getpid(), "started": 1.0}, "server": server, "context": "kind-arenac",
        "namespaces": namespaces}))


def _live_and_killed(fake, api, records) -> str:
    """Two trials' namespaces: one of a live runner (this process), one of a runner killed mid-trial;
    returns the state directory's owner id."""
    owner = records.owner()
    records.register("live", fake.url, None, ("arenac-live-app", "arenac-live-harness"))
    create_trial_namespaces(api, "live", owner)
    _dead_runner_record(records, "killed", fake.url, ["arenac-killed-app", "arenac-killed-harness"])
    create_trial_namespaces(api, "killed", owner)
    return owner


def test_the_owner_is_made_once_and_kept(records) -> None:
    owner = records.owner()
    assert len(owner) == 16 and int(owner, 16) >= 0
    assert records.owner() == owner


def test_a_registered_trial_is_live_until_unregistered(records) -> None:
    record = records.register("t1", "https://k:6443", "kind-arenac", ("arenac-t1-app", "arenac-t1-harness"))
    assert record.live() and records.live_trials() == {"t1"}
    records.unregister("t1")
    assert records.live_trials() == set() and records.records() == []


def test_leftovers_are_this_owners_namespaces_of_trials_not_live(fake, api, records) -> None:
    owner = _live_and_killed(fake, api, records)
    create_trial_namespaces(api, "unrecorded", owner)
    create_trial_namespaces(api, "foreign", "fedcba9876543210")  # another machine's runner
    fake.put(NAMESPACES, None, "payments", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "payments", "labels": {"team": "payments"}, "annotations": {"arenac.dev/owner": owner}}})
    found = leftovers(api, records)
    assert found == [
        Leftover("arenac-killed-app", "killed", "application", "its runner is gone"),
        Leftover("arenac-killed-harness", "killed", "harness", "its runner is gone"),
        Leftover("arenac-unrecorded-app", "unrecorded", "application", "no record of its trial"),
        Leftover("arenac-unrecorded-harness", "unrecorded", "harness", "no record of its trial"),
    ]
    [listing] = [r for r in fake.requests() if r.method == "GET" and r.path == "/api/v1/namespaces"]
    assert listing.query == {"labelSelector": "app.kubernetes.io/managed-by=arenac"}


def test_cleanup_deletes_the_leftovers_and_the_dead_runners_records(fake, api, records) -> None:
    _live_and_killed(fake, api, records)
    _dead_runner_record(records, "other-cluster", "https://elsewhere:6443", ["arenac-other-cluster-app"])
    lines = cleanup(api, records, timeout_s=5, poll_s=0.05)
    assert lines == [
        "deleted namespace arenac-killed-app (trial killed, application: its runner is gone)",
        "deleted namespace arenac-killed-harness (trial killed, harness: its runner is gone)",
        "removed the record of trial killed (its runner is gone)",
        f"kept the record of trial other-cluster: its runner is gone, but its namespaces are on "
        f"https://elsewhere:6443, not {fake.url}; run the cleanup against that cluster",
    ]
    assert fake.names(NAMESPACES) == ["arenac-live-app", "arenac-live-harness"]
    assert sorted(r.trial for r in records.records()) == ["live", "other-cluster"]
    assert cleanup(api, records, timeout_s=5, poll_s=0.05)[-1].startswith("kept the record of trial other-cluster")
