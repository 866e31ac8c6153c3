"""What every spine service shares: probes, metrics, admin endpoints, error mapping.

Contract (every service):
- `GET /healthz`: 200 while the process serves requests (liveness).
- `GET /readyz`: 200 once its dependencies are connected, else 503 with the reason (readiness).
- `GET /metrics`: Prometheus text; requests by route and status, latency histograms, pool gauges.
- Every `/admin/*` route needs the stack's admin credential (`Authorization: Bearer <token>`,
  compared in constant time); without it, or with a wrong one, the answer is 401 `unauthorized`
  and nothing runs. A service started without a credential (`admin_token` empty) answers every
  admin call 401: the admin API fails closed. Probes, `/metrics` and the public API stay open.
  The token is read from a file (`SPINE_ADMIN_TOKEN_FILE`), never shown by any answer.
- `GET /admin/config`: effective config, where each value comes from, reloadable keys, keys
  waiting for a restart. Credentials are never shown: a secret key's value is `<redacted>` and so
  is the password inside any URL (Redis URLs); the admin API is what an agent may be granted.
  `POST /admin/config` with a JSON object {KEY: value} changes reloadable keys in memory (all or
  none; 400 naming the key otherwise).
- `GET /admin/event`: {"events": {name: on}}; `POST /admin/event` {"name": ..., "on": bool}.
- `POST /admin/reload`: re-read the config file and environment (drops run-time config changes).
  Events switched at run time are kept, as the field's substrates keep an admin toggle across a
  config reload: they go back to `EVENTS` only when `EVENTS` itself changed (in the file, the
  environment or at run time) or the process restarts. A changed pool key or role that cannot be applied answers 503
  `pool_rebuild_failed`: the value is recorded but the previous pool keeps serving.
- Errors reach the client as JSON {"error": kind, "message": ...}, every one of them (aiohttp's
  own 404/405 included): a pool timeout or a missing dependency is 503, a statement timeout is
  503, any other database error 500 (with its SQLSTATE). Messages never carry a URL's password.
A service plugs in as a `Component`: its routes, its start/stop, its readiness and its reaction to
config changes.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
import redis.exceptions
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from spine_services.common import json_object
from spine_services.configstore import ConfigStore
from spine_services.db import Database, NotReady, PoolRebuildError, PoolTimeout
from spine_services.keys import EVENTS, ConfigError, redact_text
from spine_services.releases import Release

if TYPE_CHECKING:
    from aiohttp.typedefs import Middleware

log = logging.getLogger(__name__)

REQUESTS = Counter("spine_http_requests_total", "requests served", ["route", "status"])
LATENCY = Histogram(
    "spine_http_request_seconds", "request latency", ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
EVENT_ON = Gauge("spine_event_on", "admin events switched on", ["event"])
INFO = Gauge("spine_service_info", "the service and release this process runs", ["service", "release"])

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": kind, "message": redact_text(message)}, status=status)


def _as_json_error(exc: web.HTTPException) -> web.Response:
    """An aiohttp error answer (plain text: an unknown route, a wrong method) in the documented shape."""
    response = error(exc.status, exc.reason.lower().replace(" ", "_").replace("-", "_"), exc.reason)
    for name, value in exc.headers.items():
        if name.lower() not in ("content-type", "content-length"):
            response.headers[name] = value  # e.g. Allow on a 405
    return response


@dataclass
class EventState:
    """Named admin events of a service; only the names the service knows are accepted."""

    known: tuple[str, ...]
    on: dict[str, bool] = field(default_factory=dict)

    def check(self, names: tuple[str, ...]) -> None:
        unknown = [name for name in names if name not in self.known]
        if unknown:
            known = ", ".join(self.known) or "none"
            raise ConfigError("EVENTS", f"unknown event(s) {', '.join(unknown)}; known: {known}")

    def reset(self, booted: tuple[str, ...]) -> None:
        self.check(booted)
        self.on = {name: name in booted for name in self.known}
        for name, state in self.on.items():
            EVENT_ON.labels(name).set(int(state))

    def switch(self, name: str, state: bool) -> None:
        if name not in self.known:
            raise ConfigError(name, f"unknown event; known: {', '.join(self.known) or 'none'}")
        self.on[name] = state
        EVENT_ON.labels(name).set(int(state))


@dataclass
class ServiceContext:
    name: str
    config: ConfigStore
    release: Release
    events: EventState


async def strict_hold(ctx: ServiceContext) -> None:
    """The store-consistency event: while `read_consistency_strict` is on, a database read waits
    READ_CONSISTENCY_HOLD_MS first ("until every write is visible"), holding the pooled connection
    its caller borrowed. Only the services whose requests read the database have the event."""
    if ctx.events.on.get("read_consistency_strict"):
        await asyncio.sleep(ctx.config.get_int("READ_CONSISTENCY_HOLD_MS") / 1000)


class Component(ABC):
    """One spine service plugged into the shared app."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def routes(self) -> list[web.RouteDef]:
        """Routes with a `name` (the metrics label), e.g. web.post(path, handler, name="send")."""

    async def start(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Start connecting and background work; must not block on dependencies."""

    async def stop(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Stop background work and close connections."""

    def not_ready(self) -> str:
        """Empty when ready, else why not."""
        return ""

    async def config_changed(self, keys: set[str]) -> None:  # noqa: B027 - optional hook, no-op by default
        """React to changed effective keys (run-time change or reload)."""

    def admin_routes(self) -> list[web.RouteDef]:
        return []


class DbComponent(Component):
    """A component with a database pool (every service but the gateway)."""

    def __init__(self, ctx: ServiceContext) -> None:
        super().__init__(ctx)
        self.db = Database(ctx.config)

    async def start(self) -> None:
        self.db.start()

    async def stop(self) -> None:
        await self.db.stop()

    def not_ready(self) -> str:
        return "" if self.db.ready else f"database: {self.db.last_error}"

    async def config_changed(self, keys: set[str]) -> None:
        await self.db.apply(keys)


@web.middleware
async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Map failures to JSON errors and record per-route metrics for named routes."""
    route = request.match_info.route.name
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        if status >= 400 and exc.content_type != "application/json":
            return _as_json_error(exc)
        raise
    except (PoolTimeout, NotReady) as exc:
        status = 503
        return error(503, "db_pool_timeout" if isinstance(exc, PoolTimeout) else "not_ready", str(exc))
    except asyncpg.QueryCanceledError as exc:  # statement_timeout or a cancelled lock wait
        status = 503
        return error(503, "statement_timeout", str(exc))
    except asyncpg.PostgresError as exc:
        return error(500, f"database:{exc.sqlstate}", str(exc))
    except redis.exceptions.RedisError as exc:
        status = 503
        return error(503, "redis", str(exc))
    finally:
        if route:
            REQUESTS.labels(route, str(status)).inc()
            LATENCY.labels(route).observe(time.perf_counter() - started)


ADMIN_PREFIX = "/admin"


def admin_guard(token: str) -> Middleware:
    """Middleware: /admin/* answers 401 unless the request carries `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode() if token else None

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.rel_url.path
        if path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
            given = request.headers.get("Authorization", "").encode()
            if expected is None or not hmac.compare_digest(given, expected):
                response = error(401, "unauthorized", "the admin API needs the admin credential")
                response.headers["WWW-Authenticate"] = 'Bearer realm="spine-admin"'
                return response
        return await handler(request)

    return guard


def build_app(component: Component, admin_token: str = "") -> web.Application:
    ctx = component.ctx
    # the guard runs first, so a refused admin call is still counted by `observe`'s metrics
    app = web.Application(middlewares=[observe, admin_guard(admin_token)])
    INFO.labels(ctx.name, ctx.release.version).set(1)

    def config_view() -> dict[str, Any]:
        store = ctx.config
        return {
            "service": ctx.name,
            "release": ctx.release.version,
            "config": {key: store.specs[key].shown(value) for key, value in store.effective().items()},
            "sources": store.sources(),
            "reloadable": sorted(k for k, spec in store.specs.items() if spec.reloadable),
            "pending_restart": store.pending_restart(),
            "unknown_in_file": store.unknown_in_file,
        }

    async def apply(changed: set[str]) -> None:
        if "EVENTS" in changed:  # the events go back to the new EVENTS; otherwise they stay as switched
            ctx.events.reset(ctx.config.get_list("EVENTS"))
        await component.config_changed(changed)

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "service": ctx.name, "release": ctx.release.version})

    async def readyz(_: web.Request) -> web.Response:
        reason = component.not_ready()
        if reason:
            return web.json_response({"ready": False, "reason": reason}, status=503)
        return web.json_response({"ready": True})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def get_config(_: web.Request) -> web.Response:
        return web.json_response(config_view())

    async def post_config(request: web.Request) -> web.Response:
        body = await json_object(request)
        try:
            if "EVENTS" in body:  # validate the names before anything changes
                ctx.events.check(tuple(x.strip() for x in str(body["EVENTS"]).split(",") if x.strip()))
            changed = ctx.config.set_runtime(body)
        except ConfigError as exc:
            return error(400, "bad_config", str(exc))
        try:
            await apply(changed)
        except PoolRebuildError as exc:
            return error(503, "pool_rebuild_failed", str(exc))
        return web.json_response({**config_view(), "changed": sorted(changed)})

    async def reload(_: web.Request) -> web.Response:
        try:
            changed = ctx.config.reload()
            # a reload re-reads configuration, not run-time state: the events stay as switched
            # unless EVENTS itself changed (docs/substrate.md, "What survives what")
            await apply(changed)
        except ConfigError as exc:
            return error(400, "bad_config", str(exc))
        except PoolRebuildError as exc:
            return error(503, "pool_rebuild_failed", str(exc))
        return web.json_response({**config_view(), "changed": sorted(changed)})

    async def get_events(_: web.Request) -> web.Response:
        return web.json_response({"events": ctx.events.on})

    async def post_event(request: web.Request) -> web.Response:
        body = await json_object(request)
        name, on = body.get("name"), body.get("on")
        if not isinstance(name, str) or not isinstance(on, bool):
            return error(400, "bad_event", 'expected {"name": str, "on": bool}')
        try:
            ctx.events.switch(name, on)
        except ConfigError as exc:
            return error(404, "unknown_event", str(exc))
        return web.json_response({"events": ctx.events.on})

    app.add_routes([
        web.get("/healthz", healthz),
        web.get("/readyz", readyz),
        web.get("/metrics", metrics),
        web.get("/admin/config", get_config),
        web.post("/admin/config", post_config),
        web.post("/admin/reload", reload),
        web.get("/admin/event", get_events),
        web.post("/admin/event", post_event),
        *component.admin_routes(),
        *component.routes(),
    ])

    async def on_startup(_: web.Application) -> None:
        await component.start()

    async def on_cleanup(_: web.Application) -> None:
        await component.stop()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


def make_context(service: str, config: ConfigStore, release: Release) -> ServiceContext:
    events = EventState(EVENTS[service])
    events.reset(config.get_list("EVENTS"))
    return ServiceContext(service, config, release, events)
