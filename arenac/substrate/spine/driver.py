"""spine's driver: spine as the runner, the broker and the load generator see it.

Contract: `DRIVER` implements `SubstrateDriver` (arenac/substrate/interface.py) for spine, and
is what arenac/substrate/registry.py returns for the name `spine`. Its facts come from the
application itself (spine_services: its services, releases, config files) and from the local
driver beside it (the seed, the chart's init scripts, the embedded PostgreSQL's client programs);
its reads and bursts with the harness's hands are harness.py's; `provision` makes a `SpineStack`
configured from the bundle's own chart (local_config.py); `cluster_endpoints`, where its chart
installed in a namespace answers, is in_cluster.py's. The heavy parts (the stack, PostgreSQL's
binaries, the route client, the harness's reads) are imported when first asked for, so that naming
the driver stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import spine_services
from arenac.substrate.interface import SecretKeys, SeedData, SubstrateDriver
from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS, chart_file
from spine_services.configstore import read_config_source
from spine_services.keys import SERVICES
from spine_services.releases import RELEASES

if TYPE_CHECKING:
    from arenac.loadgen.acks import AckLog
    from arenac.loadgen.routes import RouteClient
    from arenac.model.evidence import FanoutAtSoakEnd, MessagesAtSoakEnd
    from arenac.substrate.interface import BurstCount, Endpoints, HarnessHands, JobReading
    from arenac.substrate.spine.stack import SpineStack

# the PostgreSQL ConfigMap's keys (as the chart names them) and the chart files they hold
POSTGRES_INIT = {"10-roles.sql": "roles.sql", "30-schema.sql": "schema.sql", "40-seed.sql": "seed.sql"}


class SpineDriver:
    name = "spine"
    database = "spine"
    app_role = "spine_app"
    exec_db_roles = ("spine_operator", "spine_readonly")  # an operator's and a reader's, never a superuser
    services: tuple[str, ...] = SERVICES
    releases: tuple[str, ...] = tuple(RELEASES)
    seed = SeedData(users=USERS, channels=tuple(name for name, _ in CHANNELS),
                    messages_per_channel=MESSAGES_PER_CHANNEL)

    @property
    def postgres_bin(self) -> Path:
        from arenac.substrate.spine.postgres import POSTGRES_BIN_PATH  # lazily: loads the embedded wheel

        return POSTGRES_BIN_PATH

    @property
    def private_dirs(self) -> tuple[Path, ...]:
        return (Path(spine_services.__file__).parent,)  # the application's source, its defects included


    def read_config(self, path: Path) -> dict[str, str]:
        return read_config_source(path)

    def write_config(self, path: Path, data: dict[str, str]) -> None:
        import yaml  # lazily: only the brokered cluster writes config files

        path.write_text(yaml.safe_dump(data, default_flow_style=False, sort_keys=True))

    def datastore_init(self) -> dict[str, str]:
        return {key: chart_file(file).read_text() for key, file in POSTGRES_INIT.items()}

    def route_client(self, target: str) -> RouteClient:
        from arenac.substrate.spine.routes import SpineClient  # lazily: only the load generator drives routes

        return SpineClient(target)

    queues = ("fanout",)
    redis_acl_users = frozenset({"fanout"})  # the fanout worker's user; the app's `default`, `harness`, `agent` never

    # the harness's reads and bursts import its datastore and HTTP clients: lazily, at first use
    def backlog(self, hands: HarnessHands, queue: str) -> int:
        from arenac.substrate.spine.harness import backlog

        return backlog(hands, queue)

    jobs = ("maintenance",)

    def runs(self, hands: HarnessHands, job: str) -> JobReading:
        from arenac.substrate.spine.harness import runs

        return runs(hands, job)

    def health_problem(self, endpoints: Endpoints) -> str:
        from arenac.substrate.spine.harness import health_problem

        return health_problem(endpoints)

    def acked_messages(self, hands: HarnessHands, baseline_max_ids: Mapping[str, int]) -> MessagesAtSoakEnd:
        from arenac.substrate.spine.harness import acked_messages

        return acked_messages(hands, baseline_max_ids)

    def fanout_state(self, hands: HarnessHands) -> FanoutAtSoakEnd:
        from arenac.substrate.spine.harness import fanout_state

        return fanout_state(hands)

    async def send_burst(self, endpoints: Endpoints, channel: str, messages: int, concurrency: int,
                         acks: AckLog | None) -> BurstCount:
        from arenac.substrate.spine.harness import send_burst

        return await send_burst(endpoints, channel, messages, concurrency, acks)

    def cluster_endpoints(self, namespace: str, credentials: Mapping[str, str]) -> Endpoints:
        from arenac.substrate.spine.in_cluster import cluster_endpoints

        return cluster_endpoints(namespace, credentials)

    @property
    def cluster_credentials(self) -> tuple[SecretKeys, ...]:
        from arenac.substrate.spine.in_cluster import CREDENTIAL_SECRETS

        return CREDENTIAL_SECRETS

    def provision(self, directory: Path, bundle: Path, time_scale: float, *, healthy: bool) -> SpineStack:
        from arenac.substrate.spine.local_config import spine_spec  # lazily: renders the chart with Helm
        from arenac.substrate.spine.stack import SpineStack

        return SpineStack(directory, spine_spec(bundle, time_scale, healthy=healthy))


DRIVER: SubstrateDriver = SpineDriver()
