"""SpineStack: one isolated spine instance as local processes (a `LocalStack`: substrate/interface.py).

Contract:
- `SpineStack(data_dir, spec)`: everything lives under `data_dir` (cluster, Redis config, service
  config files, logs, secrets); ports are free loopback ports chosen at `start()`, so any number
  of stacks run side by side. A second start on the same directory keeps the database.
- `start() -> Endpoints` returns once every component answers ready (bounded by `ready_timeout`),
  and writes `<data_dir>/endpoints.json` (0600: it carries superuser DSNs). Before anything starts
  it checks the PostgreSQL settings (`SpecError`) and takes the directory's lock: a directory a
  live stack owns is refused with `DirectoryBusy` and left untouched. On failure it stops what it
  started and raises (`ComponentFailed` with the log tail when a process died starting).
- Every process is known to `stop()`, and recorded in `<data_dir>/pids.json`, from the moment it
  is spawned, so a stop at any point of start-up ends everything started so far. `cancel()`
  (safe from a signal handler: it only sets a flag) makes a running `start()` stop waiting and
  raise `Cancelled` at its next check.
- Each service runs as `python -m spine_services NAME --config <data_dir>/config/NAME.yaml`
  on a listening socket the stack holds, so its port survives restarts. The config file is written
  at `start()` from the spec and not again: an edit + `/admin/reload`, or an edit + restart, takes
  effect; run-time `/admin/config` changes are lost on restart.
- `restart_service(name)` restarts one service, or "postgres" or "redis", and waits until ready;
  `restarting()` names the components under way, `children()` the processes running now;
  `images()` what each workload runs; `substrate` is spine's driver.
- `set_service_env(name, env)` sets extra environment for one service (a workload's `env`); it
  takes effect at the service's next start.
- `set_service_image(name, release)` makes one service run as the image of `release` would: from
  its next start the release comes from `<data_dir>/images/<name>.release`, which neither the
  config file nor the environment (`SPINE_RELEASE`) can override (see releases.py).
- `stop()` stops every process it started, by PID (services, then Redis and PostgreSQL), and closes
  every port; it is idempotent and also runs on `with` exit and at interpreter exit. It releases
  the directory's lock and clears the PID ledger only if this stack held the lock.
"""

from __future__ import annotations

import atexit
import json
import secrets
import signal
import socket
import sys
import weakref
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from arenac.substrate.interface import StackImages, SubstrateDriver
from arenac.substrate.procs import (
    Cancelled,
    Child,
    ComponentFailed,
    DirectoryBusy,
    DirLock,
    PidLedger,
    env_with,
    free_port,
    listening_socket,
    spawn,
    stop,
    stop_all,
    wait_until,
    write_private,
)
from arenac.substrate.spine.driver import DRIVER
from arenac.substrate.spine.endpoints import ComponentStatus, Endpoints, http_not_ready, probe
from arenac.substrate.spine.postgres import ROLES, LocalPostgres, check_settings
from arenac.substrate.spine.redis_local import LocalRedis
from arenac.substrate.spine.spec import REDIS_USERS, SpecError, SpineSpec
from spine_services.keys import SERVICES

__all__ = [
    "COMPONENTS",
    "Cancelled",
    "ComponentFailed",
    "ComponentStatus",
    "DirectoryBusy",
    "Endpoints",
    "SpineStack",
    "preflight",
    "probe",
]

COMPONENTS = (*SERVICES, "postgres", "redis")
# PostgreSQL: SIGINT is its "fast" shutdown (SIGTERM would wait for every session to end)
SERVER_STOP_SIGNAL = {"postgres": signal.SIGINT, "redis": signal.SIGTERM}


@dataclass
class _Secrets:
    postgres: dict[str, str]
    redis: dict[str, str]
    auth_secret: str
    admin_token: str = ""

    @classmethod
    def load_or_create(cls, path: Path) -> _Secrets:
        made = cls(**json.loads(path.read_text())) if path.exists() else cls(
            postgres={role: secrets.token_hex(12) for role in ROLES}, redis={}, auth_secret=secrets.token_hex(16))
        before = asdict(made)
        # a directory made by an older stack lacks the newer credentials: add them, keep the rest
        for user in REDIS_USERS:
            made.redis.setdefault(user, secrets.token_hex(12))
        made.admin_token = made.admin_token or secrets.token_urlsafe(32)
        if asdict(made) != before or not path.exists():
            write_private(path, json.dumps(asdict(made), indent=2, sort_keys=True))
        return made


def preflight(spec: SpineSpec) -> None:
    """Refuse (SpecError) what would make a component fail at start-up and can be known before:
    PostgreSQL settings the server binary rejects. The rest of the spec is checked on construction."""
    problems = check_settings(spec.postgres.settings)
    if problems:
        raise SpecError(problems)


_LIVE: weakref.WeakSet[SpineStack] = weakref.WeakSet()


@atexit.register
def _stop_live_stacks() -> None:  # a crashed caller must not leave servers behind
    for stack in list(_LIVE):
        stack.stop()


@dataclass(eq=False)  # identity semantics: stacks are tracked in a WeakSet
class SpineStack:
    data_dir: Path
    spec: SpineSpec = field(default_factory=SpineSpec)
    ready_timeout: float = 30.0
    _children: dict[str, Child] = field(default_factory=dict, init=False, repr=False)
    _restarting: set[str] = field(default_factory=set, init=False, repr=False)
    _sockets: dict[str, socket.socket] = field(default_factory=dict, init=False, repr=False)
    _postgres: LocalPostgres | None = field(default=None, init=False, repr=False)
    _redis: LocalRedis | None = field(default=None, init=False, repr=False)
    _env: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _service_env: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _images: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _cancelled: bool = field(default=False, init=False, repr=False)
    _admin_token: str = field(default="", init=False, repr=False)
    _lock: DirLock = field(init=False, repr=False)
    endpoints: Endpoints | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        self._lock = DirLock(self.data_dir)
        for name, service in self.spec.services.items():
            if service.replicas != 1:
                raise ValueError(f"services.{name}.replicas={service.replicas}: the local stack runs exactly one")

    # -- paths -------------------------------------------------------------------------------
    def config_path(self, service: str) -> Path:
        return self.data_dir / "config" / f"{service}.yaml"

    def log_path(self, component: str) -> Path:
        return self.data_dir / "logs" / f"{component}.log"

    @property
    def admin_token_path(self) -> Path:
        return self.data_dir / "admin-token"

    def image_path(self, service: str) -> Path:
        return self.data_dir / "images" / f"{service}.release"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Endpoints:
        if self.endpoints is not None:
            return self.endpoints
        preflight(self.spec)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()  # DirectoryBusy: another live stack owns the directory; nothing touched
        _LIVE.add(self)
        try:
            ledger = PidLedger(self.data_dir / "pids.json")
            ledger.end_leftovers()
            return self._start(ledger)
        except BaseException:
            self.stop()
            raise

    def cancel(self) -> None:
        """Make a running (or the next) start() give up at its next check; signal-handler safe."""
        self._cancelled = True

    def _check_cancelled(self) -> None:
        if self._cancelled:
            raise Cancelled("stopped during start-up")

    def _start(self, ledger: PidLedger) -> Endpoints:
        keys = _Secrets.load_or_create(self.data_dir / "secrets.json")
        self._postgres = LocalPostgres(self.data_dir / "postgres", free_port(), keys.postgres,
                                       dict(self.spec.postgres.settings))
        self._redis = LocalRedis(self.data_dir / "redis", free_port(), keys.redis, self.config_path("redis"))
        passfile = self.data_dir / "pgpass"
        write_private(passfile, self._postgres.passfile_lines())
        # the services read the admin credential from this file (0600, the stack's user): never an
        # argument or a variable, which other users may list
        write_private(self.admin_token_path, keys.admin_token + "\n")
        self._admin_token = keys.admin_token
        for name in SERVICES:
            self._sockets[name] = listening_socket()
            path = self.config_path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(self.spec.service_file(name), default_flow_style=False, sort_keys=True))
        # Redis's ConfigMap, which its every start reads (redis_local.py), as the services' files
        self.config_path("redis").write_text(
            yaml.safe_dump(self.spec.redis.configmap(), default_flow_style=False, sort_keys=True))
        self._env = env_with(self._wiring(keys, passfile))

        def cancelled() -> bool:
            return self._cancelled

        # each process is recorded (memory and ledger) as soon as it exists, before any wait
        self._check_cancelled()
        self._record(ledger, self._redis.launch(self.log_path("redis")))
        self._redis.wait_ready(self.ready_timeout, cancelled)
        # services import and retry their dependencies while PostgreSQL initialises: overlapped
        for name in SERVICES:
            self._check_cancelled()
            self._spawn_service(name)
            ledger.record(list(self._children.values()))
        self._check_cancelled()
        self._record(ledger, self._postgres.launch(self.log_path("postgres")))
        self._postgres.wait_ready(self.ready_timeout, cancelled)
        wait_until(self._services_not_ready, self.ready_timeout, "spine services", cancelled=cancelled)
        self._check_cancelled()
        return self._publish()

    def _record(self, ledger: PidLedger, child: Child) -> None:
        self._children[child.name] = child
        ledger.record(list(self._children.values()))

    def restart_service(self, name: str) -> None:
        """Restart one service, or "postgres" or "redis", and wait until it is ready again."""
        if name not in COMPONENTS:
            raise ValueError(f"unknown component {name!r}; expected one of {', '.join(COMPONENTS)}")
        if self._postgres is None or self._redis is None:
            raise RuntimeError("the stack is not running")
        self._restarting.add(name)
        try:
            self._restart(name)
        finally:
            self._restarting.discard(name)

    def _restart(self, name: str) -> None:
        if name in ("postgres", "redis"):
            datastore = self._postgres if name == "postgres" else self._redis
            assert datastore is not None  # restart_service checked that the stack is running
            datastore.stop()
            datastore.start(self.log_path(name), timeout=self.ready_timeout)
            assert datastore.child is not None  # start() spawned it
            self._children[name] = datastore.child
            if name == "postgres":  # the services lost their connections: wait until they answer again
                wait_until(self._services_not_ready, self.ready_timeout, "spine services")
        else:
            stop(self._children[name])
            self._spawn_service(name)
            wait_until(lambda: self._service_not_ready(name), self.ready_timeout, name)
        PidLedger(self.data_dir / "pids.json").record(list(self._children.values()))
        self._publish()

    def set_service_env(self, name: str, env: Mapping[str, str]) -> None:
        """Replace the extra environment of one service; it applies from the service's next start."""
        if name not in SERVICES:
            raise ValueError(f"unknown service {name!r}; expected one of {', '.join(SERVICES)}")
        self._service_env[name] = dict(env)

    def set_service_image(self, name: str, version: str | None) -> None:
        """Run `name` from its next start as the image of release `version` (None: the release comes
        from its configuration again). An unknown release is passed on: the service refuses it."""
        if name not in SERVICES:
            raise ValueError(f"unknown service {name!r}; expected one of {', '.join(SERVICES)}")
        if version is None:
            self._images.pop(name, None)
        else:
            self._images[name] = version

    def stop(self) -> None:
        # a process whose launch was interrupted before it reached _children is still stopped
        for server in (self._postgres, self._redis):
            if server is not None and server.child is not None and server.child.name not in self._children:
                self._children[server.child.name] = server.child
        # services first (they hold database sessions), then the two servers, each group at once
        stop_all([(self._children.pop(name), signal.SIGTERM) for name in SERVICES if name in self._children])
        stop_all([(child, SERVER_STOP_SIGNAL[name]) for name, child in self._children.items()], timeout=15)
        self._children.clear()
        for sock in self._sockets.values():
            sock.close()
        self._sockets.clear()
        self.endpoints = None
        self._cancelled = False
        if self._lock.held:  # only the owner of the directory may clear its ledger
            PidLedger(self.data_dir / "pids.json").clear()
            self._lock.release()
        _LIVE.discard(self)

    def __enter__(self) -> SpineStack:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- observation -------------------------------------------------------------------------
    def pids(self) -> dict[str, int]:
        return {name: child.pid for name, child in self._children.items()}

    def children(self) -> dict[str, Child]:
        """The processes running now, by component (a copy: restarts replace entries)."""
        return dict(self._children)

    def restarting(self) -> frozenset[str]:
        """Components being restarted on purpose right now (their old process is meant to end)."""
        return frozenset(self._restarting)

    def exited(self) -> list[str]:
        """Components whose process has ended since it was started (crashed or killed)."""
        return [name for name, child in self._children.items() if not child.alive()]

    @property
    def substrate(self) -> SubstrateDriver:
        return DRIVER

    def images(self) -> StackImages:
        spec = self.spec
        return StackImages(spec.image.repository, {name: s.release for name, s in spec.services.items()},
                           {"postgres": spec.postgres.image, "redis": spec.redis.image})

    def status(self) -> list[ComponentStatus]:
        if self.endpoints is None:
            return [ComponentStatus(name, None, False, False, "not started") for name in COMPONENTS]
        return probe(self.endpoints)

    # -- internals ---------------------------------------------------------------------------
    def _wiring(self, keys: _Secrets, passfile: Path) -> dict[str, str]:
        assert self._postgres is not None and self._redis is not None
        return {
            "SPINE_PG_HOST": "127.0.0.1",
            "SPINE_PG_PORT": str(self._postgres.port),
            "SPINE_PG_DATABASE": "spine",
            "SPINE_PG_PASSFILE": str(passfile),
            "SPINE_REDIS_URL": self._redis.url("default"),
            "SPINE_REDIS_FANOUT_URL": self._redis.url("fanout"),
            "SPINE_AUTH_SECRET": keys.auth_secret,
            "SPINE_ADMIN_TOKEN_FILE": str(self.admin_token_path),
            "SPINE_AUTH_URL": self._url("auth"),
            "SPINE_CHANNEL_URL": self._url("channel"),
            "SPINE_MESSAGE_URL": self._url("message"),
        }

    def _spawn_service(self, name: str) -> None:
        sock = self._sockets[name]
        argv = [sys.executable, "-m", "spine_services", name,
                "--config", str(self.config_path(name)), "--listen-fd", str(sock.fileno()), "--exit-with-parent"]
        image = self.image_path(name)
        if name in self._images:
            image.parent.mkdir(parents=True, exist_ok=True)
            image.write_text(self._images[name] + "\n")
            argv += ["--image-release-file", str(image)]
        env = {**self._env, **self._service_env.get(name, {})}
        self._children[name] = spawn(name, argv, log_path=self.log_path(name), env=env,
                                     pass_fds=[sock.fileno()], cwd=self.data_dir)

    def _url(self, name: str) -> str:
        return f"http://127.0.0.1:{self._sockets[name].getsockname()[1]}"

    def _service_not_ready(self, name: str) -> str:
        child = self._children[name]
        if not child.alive():
            raise ComponentFailed(name, f"exit code {child.popen.returncode}\n{child.log_tail()}")
        return http_not_ready(self._url(name) + "/readyz")

    def _services_not_ready(self) -> str:
        for name in SERVICES:
            reason = self._service_not_ready(name)
            if reason:
                return f"{name}: {reason}"
        return ""

    def _publish(self) -> Endpoints:
        """Record the current endpoints (PIDs change on restarts) in memory and in endpoints.json."""
        assert self._postgres is not None and self._redis is not None
        self.endpoints = Endpoints(
            gateway=self._url("gateway"),
            services={name: self._url(name) for name in SERVICES},
            postgres={role: self._postgres.dsn(role) for role in ROLES},
            postgres_dsn=self._postgres.dsn("spine_app"),
            redis=self._redis.url("default"),
            redis_fanout=self._redis.url("fanout"),
            data_dir=str(self.data_dir),
            pids=self.pids(),
            admin_token=self._admin_token,
            redis_harness=self._redis.url("harness"),
            redis_agent=self._redis.url("agent"),
        )
        write_private(self.data_dir / "endpoints.json", self.endpoints.to_json())
        return self.endpoints
