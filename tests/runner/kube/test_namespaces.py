"""A trial's namespaces on a fake Kubernetes API (kmock's in-memory emulator, not a cluster:
tests/helpers/fake_kube.py): created with their labels and owner, kept when they are this trial's,
refused when another trial (or anything else) holds them, deleted and waited for within a bound."""

from __future__ import annotations

import threading

import pytest

from arenac.runner.kube.api import KubeError, NamespaceTaken, TeardownTimeout
from arenac.runner.kube.namespaces import create_trial_namespaces, delete_namespaces
from helpers.fake_kube import NAMESPACES

OWNER = "0123456789abcdef"


def test_both_namespaces_are_created_with_their_labels_and_owner(fake, api) -> None:
    names = create_trial_namespaces(api, "t1", OWNER)
    assert (names.application, names.harness) == ("arenac-t1-app", "arenac-t1-harness")
    for role, name in (("application", names.application), ("harness", names.harness)):
        metadata = fake.get(NAMESPACES, None, name)["metadata"]
        assert metadata["labels"] == {"app.kubernetes.io/managed-by": "arenac", "arenac.dev/trial": "t1",
                                      "arenac.dev/role": role}
        assert metadata["annotations"] == {"arenac.dev/owner": OWNER}
    posts = [(r.method, r.path) for r in fake.requests() if r.method == "POST"]
    assert posts == [("POST", "/api/v1/namespaces")] * 2


def test_this_trials_namespaces_are_kept_when_asked_again(fake, api) -> None:
    first = create_trial_namespaces(api, "t1", OWNER)
    assert create_trial_namespaces(api, "t1", OWNER) == first
    assert fake.names(NAMESPACES) == ["arenac-t1-app", "arenac-t1-harness"]


def _taken(fake, name: str, labels: dict, owner: str = OWNER, **metadata) -> None:
    fake.put(NAMESPACES, None, name, {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": name, "labels": labels,
                                                   "annotations": {"arenac.dev/owner": owner}, **metadata}})


OTHER_TRIAL = {"app.kubernetes.io/managed-by": "arenac", "arenac.dev/trial": "t2", "arenac.dev/role": "harness"}


@pytest.mark.parametrize(("labels", "owner", "metadata", "says"), [
    (OTHER_TRIAL, OWNER, {}, "belongs to trial t2: refusing to use it for trial t1"),
    ({"team": "payments"}, OWNER, {}, "is not arenac's"),
    ({**OTHER_TRIAL, "arenac.dev/trial": "t1"}, "fedcba9876543210", {}, "created by another runner's state"),
    ({**OTHER_TRIAL, "arenac.dev/trial": "t1"}, OWNER, {"deletionTimestamp": "2026-01-01T00:00:00Z"},
     "still being deleted"),
])
def test_a_namespace_held_by_another_is_refused_and_nothing_is_left(fake, api, labels, owner, metadata, says) -> None:
    _taken(fake, "arenac-t1-harness", labels, owner, **metadata)
    with pytest.raises(NamespaceTaken, match=says):
        create_trial_namespaces(api, "t1", OWNER)
    # the application namespace this call created before the refusal is deleted again
    assert fake.get(NAMESPACES, None, "arenac-t1-app") is None
    assert fake.get(NAMESPACES, None, "arenac-t1-harness") is not None


def test_an_api_error_is_a_kube_error(fake, api) -> None:
    with pytest.raises(KubeError, match="cannot create namespace arenac-t1-app: HTTP 403"):
        fake.call(lambda: fake.emulator["post", NAMESPACES] << 403)
        create_trial_namespaces(api, "t1", OWNER)


def test_teardown_deletes_and_waits_until_the_namespaces_are_gone(fake, api) -> None:
    names = create_trial_namespaces(api, "t1", OWNER)
    fake.stick(names.harness)  # Terminating until its finalizer finishes, 0.3 s from now
    finisher = threading.Timer(0.3, fake.release, args=(names.harness,))
    finisher.start()
    try:
        assert delete_namespaces(api, [names.application, names.harness], timeout_s=10, poll_s=0.05) == (
            names.application, names.harness)
    finally:
        finisher.join(timeout=5)
    assert fake.names(NAMESPACES) == []
    reads = [r for r in fake.requests() if r.method == "GET" and r.path == f"/api/v1/namespaces/{names.harness}"]
    assert len(reads) >= 2  # it did wait, reading again until the 404


def test_a_namespace_stuck_terminating_gives_the_bounded_error(fake, api) -> None:
    names = create_trial_namespaces(api, "t1", OWNER)
    fake.stick(names.application)
    with pytest.raises(TeardownTimeout, match=r"still there 0.3 s after their deletion: arenac-t1-app \(Terminating\)"
                       ) as refused:
        delete_namespaces(api, [names.application, names.harness], timeout_s=0.3, poll_s=0.05)
    assert refused.value.remaining == (names.application,)
    assert fake.get(NAMESPACES, None, names.harness) is None


def test_a_namespace_already_gone_is_no_error(fake, api) -> None:
    assert delete_namespaces(api, ["arenac-never-app"], timeout_s=1, poll_s=0.05) == ("arenac-never-app",)
