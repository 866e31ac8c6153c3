"""The real-cluster test modules' common ground (docs/kubernetes.md, "Tests"): they run only when
ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT, a context of it; else its
current one), and are skipped with that reason otherwise; `cluster_client()` connects as the runner
does; `trial_namespaces_on(api, tmp_path, teardown_s)` makes a fresh trial's namespaces and
uninstalls them (bounded) however the test ends."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenac.runner.kube.api import connect
from arenac.runner.kube.install import uninstall
from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.records import TrialRecords

KUBECONFIG = os.environ.get("ARENAC_TEST_KUBECONFIG")
CONTEXT = os.environ.get("ARENAC_TEST_KUBECONTEXT") or None
NO_CLUSTER = ("no real cluster: set ARENAC_TEST_KUBECONFIG to a kubeconfig (kind or k3s) to run the "
              "real-cluster tests")
MARKS = [pytest.mark.cluster, pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)]


def cluster_client() -> Iterator:
    """The runner's client of the test cluster, closed after the test (use as a fixture's body)."""
    assert KUBECONFIG, NO_CLUSTER
    client = connect(Path(KUBECONFIG), CONTEXT)
    yield client
    client.close()


def trial_namespaces_on(api, tmp_path: Path, teardown_s: float) -> Iterator:
    """A fresh trial's namespaces (`TrialNamespaces`), everything in them uninstalled at the end (use
    as a fixture's body)."""
    trial_id = f"arenac-test-{secrets.token_hex(4)}"
    names = create_trial_namespaces(api, trial_id, TrialRecords(tmp_path / "state" / "kube").owner())
    yield names
    uninstall(api, names.application, names.harness, timeout_s=teardown_s, poll_s=2)
