"""The substrate interface: a driver is found by name, spine's answers for spine, and a second
substrate (tests/substrate/toy_substrate.py), registered by name alone, is driven by the load
generator, the runner's snapshots and the broker's cluster view, none of which names spine."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import arenac.substrate.registry as registry
import spine_services
from arenac.broker.cluster import LocalCluster
from arenac.loadgen.routes import route_client
from arenac.lower.library import load_library
from arenac.runner.snapshot import configmaps
from arenac.substrate.registry import UnknownSubstrate, driver_for, substrate_names
from arenac.substrate.spine.driver import DRIVER as SPINE
from arenac.substrate.spine.routes import SpineClient
from arenac.substrate.spine.seed import USERS
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from spine_services.keys import SERVICES
from substrate.toy_substrate import ToyClient, ToyStack


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry.DRIVERS, "toy", "substrate.toy_substrate:DRIVER")
    return driver_for("toy")


def test_spine_is_found_by_name_and_speaks_for_spine(tmp_path):
    assert substrate_names() == ("spine",)
    assert driver_for("spine") is SPINE
    assert SPINE.services == SERVICES and "1.4.2" in SPINE.releases and "1.5.1" in SPINE.releases
    assert SPINE.seed.users == USERS and SPINE.seed.channels[0] == "general"
    init = SPINE.datastore_init()
    assert sorted(init) == ["10-roles.sql", "30-schema.sql", "40-seed.sql"] and "CREATE TABLE" in init["30-schema.sql"]
    config = tmp_path / "message.yaml"
    config.write_text("DB_POOL_SIZE: 3\nSEQUENCER_MODE: atomic\n")
    assert SPINE.read_config(config) == {"DB_POOL_SIZE": "3", "SEQUENCER_MODE": "atomic"}
    client = SPINE.route_client("http://gw/")
    assert isinstance(client, SpineClient) and client.target == "http://gw"
    assert (SPINE.postgres_bin / "psql").is_file()
    assert Path(spine_services.__file__).parent in SPINE.private_dirs


def test_a_spine_stack_is_a_local_stack_of_spine(tmp_path):
    spec = SpineSpec.from_values({"services": {"message": {"release": "1.5.0"}}})
    stack = SpineStack(tmp_path / "stack", spec)  # not started: nothing runs
    assert stack.substrate is SPINE
    images = stack.images()
    assert images.repository == "ghcr.io/arenac/spine"
    assert images.releases["message"] == "1.5.0" and images.releases["gateway"] == "1.4.2"
    assert dict(images.datastores) == {"postgres": "postgres:18", "redis": "redis:7"}


def test_an_unknown_substrate_is_refused_with_the_known_ones():
    with pytest.raises(UnknownSubstrate, match=r"no driver for substrate 'nope' \(known: spine\)"):
        driver_for("nope")
    with pytest.raises(ValueError, match=r"unknown substrate 'nope' \(known: spine, plain\)"):
        route_client("nope", "http://t", ["ping"])


def test_the_load_generator_drives_a_second_substrate_by_its_name(toy):
    client = route_client("toy", "http://t", ["ping"])
    assert isinstance(client, ToyClient)
    assert client.call("ping", random.Random(1)).url == "http://t/toy/ping"
    with pytest.raises(ValueError, match="ToyClient has no route send"):
        route_client("toy", "http://t", ["ping", "send"])


def test_the_runners_snapshot_reads_a_second_substrates_config_files(toy, tmp_path):
    stack = toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True)
    stack.config_path("web").write_text("A=1\n")
    stack.config_path("worker").write_text("B=2\nC=x=y\n")
    assert configmaps(stack) == {"redis": {}, "web": {"A": "1"},
                                 "worker": {"B": "2", "C": "x=y"}}


def test_the_brokers_cluster_view_of_a_second_substrate(toy, tmp_path):
    stack = toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True)
    assert isinstance(stack, ToyStack)
    stack.start()
    stack.config_path("web").write_text("A=1\n")
    cluster = LocalCluster(stack)
    deployments = {w.component: w.image for w in cluster.workloads("deployments")}
    assert deployments == {"web": "example.org/toy:2.0", "worker": "example.org/toy:2.0", "redis": "valkey:8"}
    assert [(w.component, w.image) for w in cluster.workloads("statefulsets")] == [("postgres", "postgres:17")]
    assert stack.images_set == {"web": "2.0", "worker": "2.0"}  # each service runs as its image would
    # every object is named after the toy's release, never spine's
    assert cluster.configmap_data("toy-web-config") == {"A": "1"}
    assert cluster.configmap_data("toy-postgres-config") == {"init.sql": "CREATE TABLE toys (id int);\n"}
    assert not [name for name in cluster.configmap_names() if not name.startswith("toy-")]
    assert {o["metadata"]["name"] for o in cluster.objects("services")} == {
        "toy-web", "toy-worker", "toy-postgres", "toy-redis"}
    assert cluster.workload_object(cluster.workload("deployments", "toy-web"))["spec"]["selector"] == {
        "matchLabels": {"app.kubernetes.io/component": "web", "app.kubernetes.io/name": "toy"}}


def test_the_agents_sandbox_hides_every_substrates_own_code(toy, monkeypatch):
    from arenac.sandbox import hidden_paths

    under_usr = "/usr/share/toy-substrate/app"  # as an installed substrate's code would lie
    assert under_usr not in hidden_paths()
    monkeypatch.setattr(type(toy), "private_dirs", (Path(under_usr),))
    assert under_usr in hidden_paths()


class _Hands:
    """The harness's hands on a toy stack: every superuser's read answered with `rows`, each one
    recorded (and `on_query` told)."""

    def __init__(self, endpoints, rows, on_query=lambda: None):
        self.endpoints, self.rows, self.on_query = endpoints, rows, on_query
        self.substrate = driver_for("toy")
        self.statements: list[str] = []

    def query(self, statement):
        self.statements.append(statement)
        self.on_query()
        return self.rows

    def admin(self, service, method, path, body=None):
        raise AssertionError("the toy's reads use no admin API")


def test_the_runners_soak_end_record_reads_a_second_substrate_through_its_driver(toy, tmp_path):
    from arenac.runner.acked import record_acked_state

    hands = _Hands(toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True).start(), [(12, "kite"), (13, "yo-yo")])
    record = record_acked_state(hands, 12.3456, {"toys": 11}).model_dump(mode="json")
    assert hands.statements == ["SELECT id, name FROM toys WHERE id > 11"]
    assert record == {"t": 12.346, "messages": {"after_id": 11, "rows": {"12": "toy:kite", "13": "toy:yo-yo"}},
                      "fanout": {"queue": "", "pending": [], "queued": [], "members": {}, "inbox_cap": 0,
                                 "inboxes": {}}}


def test_the_runners_backlog_samples_a_second_substrates_queues(toy, tmp_path):
    import threading

    from arenac.model.evidence import Backlog
    from arenac.runner.backlog import BacklogSamples

    stop = threading.Event()  # set by the first read: one sample, then the sampler returns
    hands = _Hands(toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True).start(), [(1,), (2,)], stop.set)
    clock = type("Clock", (), {"now": lambda self: 4.0, "real": lambda self, seconds: seconds})()
    BacklogSamples(tmp_path / "backlog.json", clock, toy.queues).sample(hands, stop)
    assert hands.statements == ["SELECT id FROM parcels"]
    assert Backlog.model_validate_json((tmp_path / "backlog.json").read_text()).queues == {"parcels": ((4.0, 2),)}


def test_the_runners_job_runs_sample_a_second_substrates_jobs(toy, tmp_path):
    import threading

    from arenac.model.evidence import JobRuns
    from arenac.runner.backlog import JobRunSamples

    stop = threading.Event()
    hands = _Hands(toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True).start(), [(1,), (2,), (3,)], stop.set)
    clock = type("Clock", (), {"now": lambda self: 4.0, "real": lambda self, seconds: seconds})()
    JobRunSamples(tmp_path / "runs.json", clock, toy.jobs).sample(hands, stop)
    assert hands.statements == ["SELECT id FROM sweeper_sweeps"]
    assert JobRuns.model_validate_json((tmp_path / "runs.json").read_text()).jobs == {"sweeper": ((4.0, 3),)}
    assert SPINE.jobs == tuple(job.name for job in load_library().substrates["spine"].descriptor.jobs)


def test_the_harness_sends_a_second_substrates_bursts_through_its_driver(toy, tmp_path):
    from arenac.runner.harness_io import HarnessIO

    io = HarnessIO(toy.provision(tmp_path / "toy", tmp_path, 1.0, healthy=True).start(), toy)
    try:
        assert io.send_burst("lobby", 5, 2) == {"accepted": 0, "refused": 5}
    finally:
        io.close()
