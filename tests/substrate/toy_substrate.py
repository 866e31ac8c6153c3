"""A second substrate, as small as the interface allows: two services, no processes of its own.

It exists to show that the runner, the broker and the load generator reach a substrate only
through arenac/substrate/interface.py: registered by name (tests/substrate/test_interface.py
adds it to the registry), it gets a brokered cluster view, ConfigMap snapshots, a route client, a
soak-end record of its acknowledged writes and harness send bursts without a line of theirs
changing. Its "stack" runs nothing: the PID it reports is the test's own.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from arenac.loadgen.acks import AckLog
from arenac.loadgen.routes import Call, RouteClient
from arenac.model.evidence import FanoutAtSoakEnd, MessagesAtSoakEnd
from arenac.substrate.interface import (
    BurstCount,
    Endpoints,
    HarnessHands,
    JobReading,
    SecretKeys,
    SeedData,
    StackImages,
    SubstrateDriver,
)
from arenac.substrate.procs import Child


class ToyClient(RouteClient):
    routes = frozenset({"ping"})

    def call(self, route: str, rng: random.Random) -> Call:
        return Call("GET", f"{self.target}/toy/{route}")


@dataclass
class ToyStack:
    data_dir: Path
    endpoints: Endpoints | None = None
    images_set: dict[str, str | None] = field(default_factory=dict)

    @property
    def substrate(self) -> SubstrateDriver:
        return DRIVER

    def start(self) -> Endpoints:
        self.endpoints = Endpoints(gateway="http://127.0.0.1:1", services={s: "http://127.0.0.1:1" for s in SERVICES},
                                   postgres={}, postgres_dsn="postgresql://toy@127.0.0.1:2/toy",
                                   redis="redis://127.0.0.1:3/0", redis_fanout="", data_dir=str(self.data_dir),
                                   pids=self.pids())
        return self.endpoints

    def stop(self) -> None:
        self.endpoints = None

    def restart_service(self, name: str) -> None:
        pass

    def set_service_env(self, name: str, env: Mapping[str, str]) -> None:
        pass

    def set_service_image(self, name: str, version: str | None) -> None:
        self.images_set[name] = version

    def pids(self) -> dict[str, int]:
        return {name: os.getpid() for name in (*SERVICES, "postgres", "redis")}

    def children(self) -> dict[str, Child]:
        return {}

    def restarting(self) -> frozenset[str]:
        return frozenset()

    def exited(self) -> list[str]:
        return []

    def config_path(self, service: str) -> Path:
        return self.data_dir / f"{service}.conf"

    def log_path(self, component: str) -> Path:
        return self.data_dir / f"{component}.log"

    def images(self) -> StackImages:
        return StackImages("example.org/toy", {s: "2.0" for s in SERVICES},
                           {"postgres": "postgres:17", "redis": "valkey:8"})


SERVICES = ("web", "worker")


class ToyDriver:
    name = "toy"
    database = "toy"
    app_role = "toy_app"
    exec_db_roles = ("toy_operator",)
    services = SERVICES
    releases = ("1.0", "2.0")
    seed = SeedData(users=("zoe",), channels=("lobby",), messages_per_channel=0)
    postgres_bin = Path("/nonexistent/toy/bin")
    private_dirs = ()
    queues = ("parcels",)
    redis_acl_users = frozenset({"courier"})

    def backlog(self, hands: HarnessHands, queue: str) -> int:
        """A parcel waits while its row is in the table."""
        return len(hands.query(f"SELECT id FROM {queue}"))

    jobs = ("sweeper",)

    def runs(self, hands: HarnessHands, job: str) -> JobReading:
        """A sweep leaves a row behind; the toy's sweeps never fail."""
        return JobReading(completed=len(hands.query(f"SELECT id FROM {job}_sweeps")))

    def health_problem(self, endpoints: Endpoints) -> str:
        return ""  # nothing runs, so nothing is unwell

    def read_config(self, path: Path) -> dict[str, str]:
        """`KEY=VALUE` lines: not spine's YAML."""
        lines = path.read_text().splitlines() if path.exists() else []
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def write_config(self, path: Path, data: dict[str, str]) -> None:
        path.write_text("".join(f"{key}={value}\n" for key, value in sorted(data.items())))

    def datastore_init(self) -> dict[str, str]:
        return {"init.sql": "CREATE TABLE toys (id int);\n"}

    def route_client(self, target: str) -> RouteClient:
        return ToyClient(target)

    def acked_messages(self, hands: HarnessHands, baseline_max_ids: Mapping[str, int]) -> MessagesAtSoakEnd:
        """Its writes are toys, digested by name alone."""
        after = baseline_max_ids.get("toys", 0)
        rows = hands.query(f"SELECT id, name FROM toys WHERE id > {after}")
        return MessagesAtSoakEnd(after_id=after, rows={str(id_): f"toy:{name}" for id_, name in rows})

    def fanout_state(self, hands: HarnessHands) -> FanoutAtSoakEnd:
        """No fan-out: nothing parked, queued or delivered."""
        return FanoutAtSoakEnd(queue="", pending=(), queued=(), members={}, inbox_cap=0, inboxes={})

    async def send_burst(self, endpoints: Endpoints, channel: str, messages: int, concurrency: int,
                         acks: AckLog | None) -> BurstCount:
        """Every write is refused: the toy keeps nothing."""
        return BurstCount(accepted=0, refused=messages)

    def cluster_endpoints(self, namespace: str, credentials: Mapping[str, str]) -> Endpoints:
        """Its Services are toy-<service>; one password (the key `password`) for everything."""
        password = credentials["password"].strip()
        services = {name: f"http://toy-{name}.{namespace}.svc:80" for name in SERVICES}
        dsn = f"postgresql://toy_admin:{password}@toy-db.{namespace}.svc:5432/toy"
        return Endpoints(gateway=services[SERVICES[0]], services=services, postgres={"postgres": dsn},
                         postgres_dsn=dsn, redis=f"redis://toy:{password}@toy-cache.{namespace}.svc:6379/0",
                         redis_fanout="", data_dir="", pids={}, admin_token=password)

    @property
    def cluster_credentials(self) -> tuple[SecretKeys, ...]:
        """The one key its `cluster_endpoints` reads, in the toy chart's one Secret."""
        return (SecretKeys("toy-credentials", ("password",)),)

    def provision(self, directory: Path, bundle: Path, time_scale: float, *, healthy: bool) -> ToyStack:
        directory.mkdir(parents=True, exist_ok=True)
        return ToyStack(directory)


DRIVER: SubstrateDriver = ToyDriver()
