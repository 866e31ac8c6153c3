"""Fixtures of the cluster machinery's tests: a fake Kubernetes API server (kmock's in-memory
emulator, tests/helpers/fake_kube.py: a fake, not a cluster) and the official client connected to
it, trial records in a temporary state directory, and every bundle of tasks/ compiled once."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner.kube.records import TrialRecords
from helpers import task_paths
from helpers.fake_kube import fake_kube_api


@pytest.fixture
def fake():
    with fake_kube_api() as server:
        yield server


@pytest.fixture
def api(fake):
    from kubernetes.client import ApiClient, Configuration

    configuration = Configuration()
    configuration.host = fake.url
    client = ApiClient(configuration)
    yield client
    client.close()


@pytest.fixture
def records(tmp_path):
    return TrialRecords(tmp_path / "state" / "kube")


@pytest.fixture(scope="session")
def cohort_bundles(tmp_path_factory) -> list[Path]:
    """Every bundle of tasks/, compiled once for the modules that render them all."""
    out = tmp_path_factory.mktemp("cohort-bundles")
    return [w.path for w in write_bundles(compile_paths(task_paths()), out)]
