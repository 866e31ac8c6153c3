"""Small pieces two or more spine services share: tokens, Redis keys and clients, the channel directory.

Contract:
- A token is `<user>.<hmac>`: the auth service issues it, the gateway checks it with the same
  `AUTH_SECRET` and passes the user on as the `X-Spine-User` header. Tokens do not expire.
- Inboxes live in Redis: `spine:inbox:<user>:<channel>` is a sorted set of message ids scored by
  seq; `spine:read:<user>` is a hash channel -> last seq read. Unread = inbox entries above the cursor.
- `ChannelDirectory` caches channel name -> id and the members of each channel (the seeded data
  never changes while a stack runs).
- `http_error(cls, kind, message)`: an aiohttp HTTP exception whose body has the documented error
  shape {"error": kind, "message": ...}.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

import asyncpg
import redis.asyncio as aioredis
import redis.exceptions
from aiohttp import web

from spine_services.db import Database, NotReady, PoolTimeout

USER_HEADER = "X-Spine-User"
INBOX_CAP = 500  # entries kept per inbox, so that Redis memory stays bounded when healthy


def issue_token(user: str, secret: str) -> str:
    mac = hmac.new(secret.encode(), user.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{user}.{mac}"


def verify_token(token: str, secret: str) -> str | None:
    user, _, _ = token.rpartition(".")
    if user and hmac.compare_digest(issue_token(user, secret), token):
        return user
    return None


def inbox_key(user: str, channel: str) -> str:
    return f"spine:inbox:{user}:{channel}"


def read_key(user: str) -> str:
    return f"spine:read:{user}"


def redis_client(url: str) -> aioredis.Redis:
    # short timeouts: a Redis that stalls must show up as errors, not as hung requests
    return aioredis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2, decode_responses=True)


def http_error(cls: type[web.HTTPException], kind: str, message: str) -> web.HTTPException:
    return cls(text=json.dumps({"error": kind, "message": message}), content_type="application/json")


def request_user(request: web.Request) -> str:
    user = request.headers.get(USER_HEADER, "")
    if not user:
        raise http_error(web.HTTPUnauthorized, "unauthorized", f"no user: the {USER_HEADER} header is missing")
    return user


async def json_object(request: web.Request) -> dict[str, object]:
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, "bad_request", "expected a JSON object")
    return body


class ChannelDirectory:
    """Channel ids and memberships, loaded once from the database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.ids: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.members: dict[int, tuple[str, ...]] = {}

    @property
    def loaded(self) -> bool:
        return bool(self.ids)

    async def load(self) -> None:
        async with self._db.connection() as conn:
            channels = await conn.fetch("SELECT id, name FROM channels ORDER BY id")
            rows = await conn.fetch(
                "SELECT m.channel_id, u.name FROM channel_members m JOIN users u ON u.id = m.user_id"
                " ORDER BY m.channel_id, u.id"
            )
        members: dict[int, list[str]] = {}
        for row in rows:
            members.setdefault(row["channel_id"], []).append(row["name"])
        self.members = {cid: tuple(names) for cid, names in members.items()}
        self.names = {row["id"]: row["name"] for row in channels}
        self.ids = {name: cid for cid, name in self.names.items()}

    async def channel_id(self, name: str) -> int:
        if not self.loaded:
            await self.load()
        try:
            return self.ids[name]
        except KeyError:
            raise http_error(web.HTTPNotFound, "unknown_channel", f"no such channel {name!r}") from None


async def load_when_ready(directory: ChannelDirectory) -> None:
    """Retry until the database answers; used by start() hooks that must not block."""
    while not directory.loaded:
        try:
            await directory.load()
        except (NotReady, PoolTimeout, asyncpg.PostgresError, OSError):
            await asyncio.sleep(0.05)


class RedisLink:
    """A Redis client and whether it has answered once (readiness)."""

    def __init__(self, url: str) -> None:
        self.client = redis_client(url)
        self.last_error = "connecting"
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return not self.last_error

    def start(self) -> None:
        self._task = asyncio.create_task(self._ping_until_ok())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.client.aclose()

    async def _ping_until_ok(self) -> None:
        while self.last_error:
            try:
                await self.client.ping()
                self.last_error = ""
            except (redis.exceptions.RedisError, OSError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(0.05)
