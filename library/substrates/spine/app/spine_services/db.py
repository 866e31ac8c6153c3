"""The database pool of a spine service, with the knobs a fault turns.

Contract:
- `DB_POOL_SIZE` connections are opened at start and kept; up to `DB_POOL_OVERFLOW` more are opened
  under load (and closed again after a while idle); a request that finds no free connection within
  `DB_POOL_TIMEOUT_MS` fails with PoolTimeout (the service answers 503).
- `DB_ROLE` is the role the service logs in as; passwords come from the libpq passfile `PG_PASSFILE`
  (copied to a private file first when others may read it, as on a Secret volume).
- Changing a pool key or the role at run time builds a new pool and retires the old one once its
  borrowed connections come back, so role-level settings (`ALTER ROLE ... SET statement_timeout`)
  apply to new connections only, as in PostgreSQL. If the new pool cannot open (say the role
  cannot log in) the old one keeps serving and PoolRebuildError says so.
- Until the first pool is open (PostgreSQL still starting) `connection()` raises NotReady.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from prometheus_client import Counter, Gauge

from spine_services.configstore import ConfigStore

log = logging.getLogger(__name__)

POOL_KEYS = frozenset({"DB_POOL_SIZE", "DB_POOL_OVERFLOW", "DB_POOL_TIMEOUT_MS", "DB_ROLE"})
POOL_CAPACITY = Gauge("spine_db_pool_capacity", "DB_POOL_SIZE + DB_POOL_OVERFLOW")
POOL_IN_USE = Gauge("spine_db_pool_in_use", "connections borrowed by requests right now")
POOL_TIMEOUTS = Counter("spine_db_pool_timeouts_total", "requests that found no free connection in time")


@functools.cache
def private_passfile(path: Path) -> Path:
    """libpq clients ignore a passfile others may read; a Kubernetes Secret volume is mounted
    group-readable, so such a file is copied once to a private (0600) one."""
    try:
        if not path.stat().st_mode & 0o077:
            return path
    except OSError:
        return path  # missing: connecting fails with a clear password error
    fd, copy = tempfile.mkstemp(prefix="spine-pgpass-")
    with os.fdopen(fd, "w") as out:
        out.write(path.read_text())
    return Path(copy)


class PoolTimeout(Exception):
    """No connection became free within DB_POOL_TIMEOUT_MS."""


class PoolRebuildError(Exception):
    """A changed pool key or role could not be applied (e.g. the role cannot log in)."""


class NotReady(Exception):
    """A dependency (database, Redis) is not connected yet."""


@dataclass(frozen=True)
class PoolSettings:
    size: int
    overflow: int
    timeout_s: float
    role: str

    @classmethod
    def from_config(cls, config: ConfigStore) -> PoolSettings:
        return cls(
            size=config.get_int("DB_POOL_SIZE"),
            overflow=config.get_int("DB_POOL_OVERFLOW"),
            timeout_s=config.get_int("DB_POOL_TIMEOUT_MS") / 1000,
            role=config.get("DB_ROLE"),
        )


class Database:
    def __init__(self, config: ConfigStore) -> None:
        self._config = config
        self._pool: asyncpg.Pool | None = None
        self._settings: PoolSettings | None = None
        self._connector: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[None]] = set()
        self.last_error = "connecting"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._connector = asyncio.create_task(self._connect_until_open())

    async def stop(self) -> None:
        if self._connector is not None:
            self._connector.cancel()
        if self._pool is not None:
            self._pool.terminate()
        for task in self._retiring:
            task.cancel()

    @property
    def ready(self) -> bool:
        return self._pool is not None

    async def apply(self, changed: set[str]) -> None:
        """Rebuild the pool when a pool key or the role changed."""
        if not changed & POOL_KEYS or self._pool is None:
            return
        settings = PoolSettings.from_config(self._config)
        try:
            new_pool = await self._open(settings)
        except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
            # keep serving with the old pool; the caller reports the mismatch
            raise PoolRebuildError(f"kept the previous pool: {type(exc).__name__}: {exc}") from exc
        old, self._pool, self._settings = self._pool, new_pool, settings
        POOL_CAPACITY.set(settings.size + settings.overflow)
        task = asyncio.create_task(self._retire(old))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    # -- use ---------------------------------------------------------------------------------
    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        pool, settings = self._pool, self._settings
        if pool is None or settings is None:
            raise NotReady(f"database: {self.last_error}")
        try:
            conn = await pool.acquire(timeout=settings.timeout_s)
        except TimeoutError:
            POOL_TIMEOUTS.inc()
            raise PoolTimeout(
                f"no database connection free within {settings.timeout_s * 1000:.0f} ms "
                f"(pool {settings.size}+{settings.overflow})"
            ) from None
        POOL_IN_USE.inc()
        try:
            yield conn
        finally:
            POOL_IN_USE.dec()
            await pool.release(conn)

    async def connect_outside_pool(self) -> asyncpg.Connection:
        """A session of its own, as code that bypasses the pool opens one."""
        role = self._settings.role if self._settings else self._config.get("DB_ROLE")
        return await asyncpg.connect(**self._connect_args(role))

    # -- internals ---------------------------------------------------------------------------
    def _connect_args(self, role: str) -> dict[str, object]:
        return {
            "host": self._config.get("PG_HOST"),
            "port": self._config.get_int("PG_PORT"),
            "database": self._config.get("PG_DATABASE"),
            "user": role,
            "passfile": private_passfile(Path(self._config.get("PG_PASSFILE"))),
            "timeout": 5,
        }

    async def _open(self, settings: PoolSettings) -> asyncpg.Pool:
        return await asyncpg.create_pool(
            min_size=settings.size,
            max_size=settings.size + settings.overflow,
            # overflow connections (and idle ones) are closed after this long unused
            max_inactive_connection_lifetime=30,
            **self._connect_args(settings.role),
        )

    async def _connect_until_open(self) -> None:
        delay = 0.05
        while self._pool is None:
            settings = PoolSettings.from_config(self._config)
            try:
                self._pool = await self._open(settings)
                self._settings = settings
                POOL_CAPACITY.set(settings.size + settings.overflow)
                self.last_error = ""
            except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, 0.2)  # short: readiness soon after PostgreSQL is up

    @staticmethod
    async def _retire(pool: asyncpg.Pool) -> None:
        try:
            await asyncio.wait_for(pool.close(), timeout=30)
        except TimeoutError:
            log.warning("old pool still had borrowed connections after 30 s; terminating it")
            pool.terminate()
