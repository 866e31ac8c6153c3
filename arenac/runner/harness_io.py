"""The harness's own hands on the substrate: admin calls, SQL and Redis commands, send bursts
(the substrate's driver says how a burst is sent).

This is how faults are injected and re-triggered and how snapshots are taken. It runs in the
runner's process (on a cluster, in a pod of the harness namespace: `arenac harness`,
runner/harness_commands.py) with the substrate's privileged credentials, which the agent never sees (the
agent acts only through the brokered tools): the services' admin credential, the superuser
roles and the Redis user `harness`. SQL runs on a private event loop thread so that `hold_open`
sessions (a leaked lock) stay open between calls.

Reserved capacity: snapshots read as the superuser `postgres`, which PostgreSQL's reserved slots
(superuser_reserved_connections) admit when an agent holds every other connection. Redis has no
such reservation, so the harness keeps one connection of its own open (opened at the first
command, re-opened only if it breaks): an agent that fills `maxclients` later cannot lock it out.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterable
from typing import Any

import asyncpg
import redis

from arenac.loadgen.acks import AckLog
from arenac.model.actions import (
    ActionHandler,
    AdminAction,
    AnyAction,
    KubectlAction,
    RedisAction,
    SendBurstAction,
    SqlAction,
    ValuesAction,
    dispatch,
)
from arenac.substrate.interface import BurstCount, Endpoints, SubstrateDriver


class HarnessIO:
    def __init__(self, endpoints: Endpoints, substrate: SubstrateDriver):
        self.endpoints = endpoints
        self.substrate = substrate  # its bursts, its acknowledged-state reads (acked.py)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="arenac-harness-io", daemon=True)
        self._thread.start()
        self._held: list[Any] = []
        self.acks: AckLog | None = None  # accepted burst sends are recorded there (the episode sets it)
        self._redis: Any = None
        self._redis_lock = threading.Lock()

    # ---- actions ----------------------------------------------------------------------
    def perform(self, action: AnyAction) -> Any:
        return dispatch(action, _Perform(self))

    def perform_all(self, actions: Iterable[AnyAction]) -> list[BurstCount]:
        """Carry `actions` out in order (the first that fails raises); returns what each send burst
        among them achieved, which is worth a line of the timeline."""
        bursts = []
        for action in actions:
            result = self.perform(action)
            if action.kind == "send_burst":
                bursts.append(result)
        return bursts

    @property
    def held_sessions(self) -> int:
        """How many `hold_open` SQL sessions (a leaked lock) the harness keeps open now."""
        return len(self._held)

    def admin(self, service: str, method: str, path: str, body: dict | None = None) -> dict:
        url = self.endpoints.services[service] + path
        data = json.dumps(body).encode() if method == "POST" else None
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"content-type": "application/json",
                                                  **self.endpoints.admin_headers()})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def sql(self, role: str, statement: str, hold_open: bool = False) -> list[tuple]:
        return self._run(self._sql(role, statement, hold_open))

    def query(self, statement: str) -> list[tuple]:
        """A read as the superuser (snapshots)."""
        return self._run(self._sql("postgres", statement, False, fetch=True))

    def redis(self, *command: str) -> Any:
        with self._redis_lock:
            if self._redis is None:
                # one connection, kept: a pool of one that is never given back while it works
                url = self.endpoints.redis_harness or self.endpoints.redis
                pool = redis.BlockingConnectionPool.from_url(url, max_connections=1, timeout=10, socket_timeout=10)
                self._redis = redis.Redis(connection_pool=pool)
            try:
                return self._redis.execute_command(*command)
            except (redis.ConnectionError, redis.TimeoutError):
                # Redis restarted (a challenge): reconnect once
                return self._redis.execute_command(*command)

    def send_burst(self, channel: str, messages: int, concurrency: int) -> BurstCount:
        """`messages` writes to `channel`, `concurrency` in flight at once, as the substrate sends
        them (its driver's `send_burst`); accepted ones are recorded in `acks`."""
        return self._run(self.substrate.send_burst(self.endpoints, channel, messages, concurrency, self.acks))

    # ---- plumbing ---------------------------------------------------------------------
    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    async def _sql(self, role: str, statement: str, hold_open: bool, fetch: bool = False):
        connection = await asyncpg.connect(self.endpoints.postgres[role], timeout=10)
        if hold_open:
            try:
                await connection.execute(statement)
            except BaseException:
                await connection.close()
                raise
            self._held.append(connection)
            return []
        try:
            if fetch:
                return [tuple(r) for r in await connection.fetch(statement)]
            await connection.execute(statement)
            return []
        finally:
            await connection.close()

    def release_held(self) -> None:
        async def close_all():
            for connection in self._held:
                try:
                    await connection.close(timeout=5)
                except Exception:  # the substrate may already have killed it
                    pass
            self._held.clear()

        self._run(close_all())

    def close(self) -> None:
        try:
            self.release_held()
            if self._redis is not None:
                self._redis.close()
                self._redis.connection_pool.disconnect()
                self._redis = None
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


class _Perform(ActionHandler[Any]):
    """Carries one action out with the harness's own hands."""

    def __init__(self, io: HarnessIO) -> None:
        self.io = io

    def on_admin(self, action: AdminAction) -> Any:
        return self.io.admin(action.service, action.method, action.path, dict(action.body))

    def on_sql(self, action: SqlAction) -> Any:
        return self.io.sql(action.role, action.statement, hold_open=action.hold_open)

    def on_redis(self, action: RedisAction) -> Any:
        return self.io.redis(*action.command)

    def on_send_burst(self, action: SendBurstAction) -> Any:
        return self.io.send_burst(action.channel, action.messages, action.concurrency)

    # chart values are set at install, and Kubernetes verbs are the agent's (the oracle's) only
    def on_values(self, action: ValuesAction) -> Any:
        raise TypeError(f"the harness does not perform {type(action).__name__} at run time")

    def on_kubectl(self, action: KubectlAction) -> Any:
        raise TypeError(f"the harness does not perform {type(action).__name__} at run time")
