"""Fixtures of the cluster machinery's tests: a fake Kubernetes API server (kmock's in-memory
emulator, tests/helpers/fake_kube.py: a fake, not a cluster) and the official client connected to
it, and trial records in a temporary state directory."""

from __future__ import annotations

import pytest

from arenac.runner.kube.records import TrialRecords
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
