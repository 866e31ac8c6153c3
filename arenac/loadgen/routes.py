"""Route clients: how the load generator issues each route of a substrate.

Contract:
- A `RouteClient` knows one substrate's routes. `setup(session)` runs before the clock starts (not
  measured; it raises `SetupError` when the target is not usable). `call(route, rng)` is called
  when a request is due, in schedule order, and makes every random choice with `rng`, so a seed
  gives the same request sequence; it returns a `Call` (method, URL, body...), and `Call.on_reply`
  (if set) sees the status and body of the answer.
- `SpineClient` (substrate `spine`, routes of library/substrates/spine/substrate.yaml): logs every
  seeded user in during setup and keeps their tokens; each request draws a route from the mix,
  then a user and a channel (the same draws, in the same order, as `arenac calibrate`). `read`
  asks for the messages after the highest seq it has seen sent to the channel minus 20. A send's
  text is `load N` (N counts the client's sends), and when `acks` is set (an `AckLog`) every send
  answered 201 is recorded there with the id and seq the answer returned (arenac/loadgen/acks.py).
- `PlainClient` (substrate `plain`, for benchmarks and tests): route NAME is `GET {target}/NAME`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import aiohttp

from arenac.loadgen.acks import AckLog
from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS


class SetupError(Exception):
    """The target could not be prepared for load (before the clock started)."""


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    json: Any = None
    params: dict[str, str] | None = None
    headers: dict[str, str] | None = None
    on_reply: Callable[[int, bytes], None] | None = field(default=None, compare=False)


class RouteMix:
    """The weighted route mix: `draw(rng)` picks a route with probability weight / total (one
    `rng.random()` per draw, as `random.choices` with weights does)."""

    def __init__(self, mix: dict[str, float]) -> None:
        if not mix or sum(mix.values()) <= 0 or min(mix.values()) < 0:
            raise ValueError(f"a route mix needs non-negative weights and a positive total, got {mix}")
        routes, weights = zip(*sorted(mix.items()))
        self.routes: tuple[str, ...] = routes
        self._cumulative = list(accumulate(weights))

    def draw(self, rng: random.Random) -> str:
        return rng.choices(self.routes, cum_weights=self._cumulative)[0]


class RouteClient:
    routes: frozenset[str] = frozenset()

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.acks: AckLog | None = None  # where acknowledged writes go (the generator sets it)

    async def setup(self, session: aiohttp.ClientSession) -> None:
        """Prepare the target (log users in...) before the clock starts."""

    def call(self, route: str, rng: random.Random) -> Call:
        raise NotImplementedError

    def check_routes(self, routes: Iterable[str]) -> None:
        unknown = sorted(set(routes) - self.routes)
        if unknown:
            known = ", ".join(sorted(self.routes))
            raise ValueError(f"{type(self).__name__} has no route {', '.join(unknown)} (known: {known})")


class PlainClient(RouteClient):
    def __init__(self, target: str, routes: Iterable[str]) -> None:
        super().__init__(target)
        self.routes = frozenset(routes)

    def call(self, route: str, rng: random.Random) -> Call:
        return Call("GET", f"{self.target}/{route}")


class SpineClient(RouteClient):
    routes = frozenset({"login", "channels", "send", "read", "unread"})
    # (method, path) of each route, as in substrate.yaml (a test checks they agree)
    PATHS = {
        "login": ("POST", "/api/login"),
        "channels": ("GET", "/api/channels"),
        "send": ("POST", "/api/channels/{channel}/messages"),
        "read": ("GET", "/api/channels/{channel}/messages"),
        "unread": ("GET", "/api/unread"),
    }
    READ_BACK = 20

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.tokens: dict[str, str] = {}
        self.last_seq = {name: MESSAGES_PER_CHANNEL for name, _ in CHANNELS}
        self.sends = 0

    async def setup(self, session: aiohttp.ClientSession) -> None:
        method, path = self.PATHS["login"]
        for user in USERS:
            try:
                async with session.request(method, self.target + path, json={"user": user},
                                           timeout=aiohttp.ClientTimeout(total=10)) as response:
                    body = await response.read()
                    if response.status != 200:
                        raise SetupError(f"login of {user} at {self.target} answered {response.status}: {body[:200]!r}")
                    self.tokens[user] = json.loads(body)["token"]
            except (aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
                raise SetupError(f"cannot log {user} in at {self.target}: {exc!r}") from exc

    def call(self, route: str, rng: random.Random) -> Call:
        user, channel = rng.choice(USERS), rng.choice(CHANNELS)[0]
        method, path = self.PATHS[route]
        url = self.target + path.format(channel=channel)
        auth = {"Authorization": f"Bearer {self.tokens[user]}"}
        if route == "login":
            return Call(method, url, json={"user": user})
        if route == "channels":
            return Call(method, url)
        if route == "send":
            self.sends += 1
            text = f"load {self.sends}"
            return Call(method, url, json={"text": text}, headers=auth,
                        on_reply=lambda status, body: self._sent(channel, user, text, status, body))
        if route == "read":
            after = max(0, self.last_seq[channel] - self.READ_BACK)
            return Call(method, url, params={"after": str(after)}, headers=auth)
        return Call(method, url, headers=auth)

    def _sent(self, channel: str, user: str, text: str, status: int, body: bytes) -> None:
        if status == 201:
            try:
                answer = json.loads(body)
                seq = int(answer["seq"])
            except (ValueError, KeyError, TypeError):
                return
            self.last_seq[channel] = max(self.last_seq[channel], seq)
            if self.acks is not None and answer.get("id") is not None:
                self.acks.record(table="messages", id=int(answer["id"]), channel=channel, seq=seq, author=user,
                                 text=text)


SUBSTRATES = ("spine", "plain")


def route_client(substrate: str, target: str, routes: Iterable[str]) -> RouteClient:
    """The route client of a substrate, checked to know every route in `routes`."""
    client: RouteClient
    if substrate == "spine":
        client = SpineClient(target)
    elif substrate == "plain":
        client = PlainClient(target, routes)
    else:
        raise ValueError(f"unknown substrate {substrate!r} (known: {', '.join(SUBSTRATES)})")
    client.check_routes(routes)
    return client
