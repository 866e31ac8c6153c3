"""The real-cluster test modules' common ground (docs/kubernetes.md, "Tests"): they run only when
ARENAC_TEST_KUBECONFIG names a kubeconfig (ARENAC_TEST_KUBECONTEXT, a context of it; else its
current one), and are skipped with that reason otherwise; `cluster_client()` connects as the runner
does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenac.runner.kube.api import connect

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
