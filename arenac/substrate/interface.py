"""The substrate interface: all the runner, the broker and the load generator know of a substrate.

Contract: a substrate is driven through two objects, both declared here as `typing.Protocol`s and
found by name in one place (arenac/substrate/registry.py):
- a `SubstrateDriver`, one per kind of substrate: its application services and releases, its
  seeded data, where its datastores' client programs are, how its services' config files and
  its datastore's init scripts read as ConfigMap data (the brokered cluster view), the route
  client the load generator drives it with, what it alone knows how to read and do with the
  harness's hands (`HarnessHands`: its queues' backlog, the acknowledged writes and the fan-out at
  soak end, the send burst a workload trigger asks for), the health probe of `wait-until-healthy`,
  `provision`, which makes a `LocalStack` from a bundle, and `cluster_endpoints`, where its chart
  installed in a namespace answers (the harness's commands on a cluster: `arenac harness`);
- a `LocalStack`, one running instance on this machine: start, stop, restart a component, set a
  service's environment or image for its next start, the processes it runs, its config and log
  files, the images its workloads run, and the `Endpoints` it publishes.
The models crossing the seam (`Endpoints`, `SeedData`, `StackImages`, `SecretKeys`, `BurstCount`, `JobReading`, and the
evidence models of arenac/model/evidence.py) are typed; the first three frozen. What the
interface assumes of every substrate is what the language's gates assume: HTTP services beside
one PostgreSQL database and one Redis (the descriptor's tables, sequences and queues live there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:  # types only: the load generator's extension point, the evidence, a local process
    from arenac.loadgen.acks import AckLog
    from arenac.loadgen.routes import RouteClient
    from arenac.model.evidence import FanoutAtSoakEnd, MessagesAtSoakEnd
    from arenac.substrate.procs import Child


def problems_of(error: ValidationError) -> list[str]:
    """pydantic's errors as `path: message`, the same message at several paths said once."""
    by_message: dict[str, list[str]] = {}
    for item in error.errors(include_url=False, include_input=False):
        path = ".".join(str(part) for part in item["loc"])
        for message in str(item["msg"]).removeprefix("Value error, ").splitlines():
            if message == "Extra inputs are not permitted":
                message = "unknown setting"
            if message.startswith(f"{path}.") or not path:  # the validator named the exact path
                by_message.setdefault(message, [])
            else:
                by_message.setdefault(message, []).append(path)
    return [f"{', '.join(paths)}: {message}" if paths else message for message, paths in by_message.items()]


class EndpointsError(ValueError):
    """Text that is not a spine endpoints document."""


@dataclass(frozen=True)
class Endpoints:
    """Where a running stack answers; also the JSON of the ready file."""

    gateway: str
    services: dict[str, str]
    postgres: dict[str, str]  # role -> DSN (postgres, spine_admin: superusers, for the harness only)
    postgres_dsn: str  # the application's DSN (role spine_app)
    redis: str  # the application's user
    redis_fanout: str  # the ACL user `fanout`
    data_dir: str
    pids: dict[str, int]
    # the services' admin credential (Authorization: Bearer ...): the harness's and the broker's
    admin_token: str = ""
    redis_harness: str = ""  # the ACL user `harness` (every command): fault injection, snapshots
    redis_agent: str = ""  # the ACL user `agent`: what an exec into the redis pod may do

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> Endpoints:
        try:
            return _ADAPTER.validate_json(text)
        except ValidationError as exc:
            raise EndpointsError("not a spine endpoints file: " + "; ".join(problems_of(exc))) from None


_ADAPTER = TypeAdapter(Endpoints)


@dataclass(frozen=True)
class SecretKeys:
    """The keys of one of the substrate chart's Secrets that `cluster_endpoints` reads (the runner
    copies exactly these into the harness namespace: arenac/runner/kube/harness_pod.py)."""

    secret: str  # the Secret's name, as the chart names it in the application namespace
    keys: tuple[str, ...]


@dataclass(frozen=True)
class SeedData:
    """The data every fresh instance holds: the users who can log in and the channels they write to."""

    users: tuple[str, ...]
    channels: tuple[str, ...]
    messages_per_channel: int


@dataclass(frozen=True)
class StackImages:
    """What each workload of a running stack runs: `repository:release` per application service,
    and the datastores' images (component -> image)."""

    repository: str
    releases: Mapping[str, str]
    datastores: Mapping[str, str]


class BurstCount(TypedDict):
    """What a send burst achieved (a line of the timeline's harness_action event)."""

    accepted: int
    refused: int


@dataclass(frozen=True)
class FailedJobRun:
    """A run of a periodic job that ended in an error: when it started (Unix seconds) and why."""

    start_unix: float
    error: str


@dataclass(frozen=True)
class JobReading:
    """A periodic job as its service reports it: the runs it completed since the service started,
    and the recent runs that failed (as many as the service remembers)."""

    completed: int
    failed: tuple[FailedJobRun, ...] = ()


class HarnessHands(Protocol):
    """The harness's privileged hands on a running stack (arenac/runner/harness_io.py), as a
    driver uses them: reads as the database superuser, the services' admin API."""

    @property
    def endpoints(self) -> Endpoints: ...
    def query(self, statement: str) -> list[tuple]: ...
    def admin(self, service: str, method: str, path: str, body: dict | None = None) -> dict[str, Any]: ...


class LocalStack(Protocol):
    """One running instance of a substrate on this machine (components: services and datastores)."""

    data_dir: Path
    endpoints: Endpoints | None  # None until started

    @property
    def substrate(self) -> SubstrateDriver: ...
    def start(self) -> Endpoints: ...
    def stop(self) -> None: ...
    def restart_service(self, name: str) -> None: ...
    def set_service_env(self, name: str, env: Mapping[str, str]) -> None: ...
    def set_service_image(self, name: str, version: str | None) -> None: ...
    def pids(self) -> dict[str, int]: ...
    def children(self) -> dict[str, Child]: ...
    def restarting(self) -> frozenset[str]: ...
    def exited(self) -> list[str]: ...
    def config_path(self, service: str) -> Path: ...  # a service's config file, or "redis": its ConfigMap data
    def log_path(self, component: str) -> Path: ...
    def images(self) -> StackImages: ...


class SubstrateDriver(Protocol):
    """What arenac knows of one kind of substrate."""

    @property
    def name(self) -> str:
        """The substrate's name, also its chart's release: the chart names each object
        `<name>-<component>` (`spine-message`, `spine-message-config`)."""
    @property
    def database(self) -> str:
        """The application's PostgreSQL database."""
    @property
    def app_role(self) -> str:
        """The database role the application connects as."""
    @property
    def exec_db_roles(self) -> tuple[str, ...]:
        """The roles psql inside the database pod may log in as (the first is its default)."""
    @property
    def services(self) -> tuple[str, ...]:
        """The application services: each a Deployment with a config file and a release."""
    @property
    def releases(self) -> tuple[str, ...]: ...
    @property
    def seed(self) -> SeedData: ...
    @property
    def postgres_bin(self) -> Path:
        """The directory of the PostgreSQL client programs (psql) the harness and the agent use."""
    @property
    def private_dirs(self) -> tuple[Path, ...]:
        """Where this substrate's own code lies on this machine: the agent's sandbox hides it."""
    def read_config(self, path: Path) -> dict[str, str]:
        """A service's config file (or ConfigMap directory) as the ConfigMap data it stands for."""
    def write_config(self, path: Path, data: dict[str, str]) -> None:
        """Write ConfigMap data as the service's config file (its next start reads it)."""
    def datastore_init(self) -> dict[str, str]:
        """The PostgreSQL ConfigMap's data: its init scripts by key."""
    def route_client(self, target: str) -> RouteClient:
        """The load generator's client for this substrate's routes, aimed at `target`."""
    @property
    def redis_acl_users(self) -> frozenset[str]:
        """The application's Redis users, whose ACL rules an agent may change (never a password)."""
    @property
    def queues(self) -> tuple[str, ...]:
        """The queues whose backlog an episode samples (`backlog(QUEUE)` in a gate)."""
    def backlog(self, hands: HarnessHands, queue: str) -> int:
        """How many events wait in `queue` now; raises when the stack does not say."""
    @property
    def jobs(self) -> tuple[str, ...]:
        """The periodic jobs whose completed runs an episode samples (`runs(JOB)` in a gate)."""
    def runs(self, hands: HarnessHands, job: str) -> JobReading:
        """How many runs of `job` completed since its service started, and its recent failed runs;
        raises when the stack does not say."""
    def health_problem(self, endpoints: Endpoints) -> str:
        """"" when every service is ready and the front door serves a write, else why not
        (`wait-until-healthy`)."""
    def acked_messages(self, hands: HarnessHands, baseline_max_ids: Mapping[str, int]) -> MessagesAtSoakEnd:
        """The rows written after the baseline, digested as their writers digested what they sent."""
    def fanout_state(self, hands: HarnessHands) -> FanoutAtSoakEnd:
        """Where every fan-out event is at soak end (parked, queued, delivered)."""
    async def send_burst(self, endpoints: Endpoints, channel: str, messages: int, concurrency: int,
                         acks: AckLog | None) -> BurstCount:
        """`messages` writes to `channel` as a seeded user, `concurrency` at once, each accepted one
        recorded in `acks`; refusals are counted, not raised."""
    def cluster_endpoints(self, namespace: str, credentials: Mapping[str, str]) -> Endpoints:
        """Where the substrate's chart installed in `namespace` answers, seen from another namespace
        of the cluster (Service DNS names), with the credentials its Secrets hold (`credentials`:
        key -> value, as the Secrets mounted as files read); `EndpointsError` names what is missing.
        The harness's commands on a cluster reach the substrate through these (`arenac harness`)."""
    @property
    def cluster_credentials(self) -> tuple[SecretKeys, ...]:
        """The chart's Secrets and, of each, the keys `cluster_endpoints` needs, no more: what the
        runner copies from the application namespace for the harness pod to mount as files."""
    def provision(self, directory: Path, bundle: Path, time_scale: float, *, healthy: bool) -> LocalStack:
        """A stack (not started) under `directory`, configured as the bundle's chart would be
        (`healthy`: the chart without the faults' overlays)."""
