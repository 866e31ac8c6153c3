"""Route clients: how the load generator issues each route of a substrate.

Contract:
- A `RouteClient` knows one substrate's routes. `setup(session)` runs before the clock starts (not
  measured; it raises `SetupError` when the target is not usable). `call(route, rng)` is called
  when a request is due, in schedule order, and makes every random choice with `rng`, so a seed
  gives the same request sequence; it returns a `Call` (method, URL, body...), and `Call.on_reply`
  (if set) sees the status and body of the answer, `Call.on_error` (if set) the kind of failure
  when no answer came (a timeout, a connection error, a drain cut short). `call` returns None when
  the route has nothing to act on yet (a delete before the client holds a message of its own):
  the generator then starts nothing for that arrival and records none.
- The generator tells the client its clock (`clock`, plan seconds) and `keep_before_s`: writes
  requested before that plan time are never deleted by the client, as the baseline snapshot,
  taken when the warm-up ends, covers them by a checksum that a deletion would change.
- A substrate's own client comes from its driver (`SubstrateDriver.route_client`, found by name
  in arenac/substrate/registry.py; spine's is arenac/substrate/spine/routes.py), so a substrate
  is added without touching the load generator.
- `PlainClient` (substrate `plain`, for benchmarks and tests): route NAME is `GET {target}/NAME`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import aiohttp

from arenac.loadgen.acks import AckLog
from arenac.substrate.registry import driver_for, substrate_names


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
    on_error: Callable[[str], None] | None = field(default=None, compare=False)


class RouteMix:
    """The weighted route mix: `draw(rng)` picks a route with probability weight / total (one
    `rng.random()` per draw, as `random.choices` with weights does)."""

    def __init__(self, mix: dict[str, float]) -> None:
        if not mix or sum(mix.values()) <= 0 or min(mix.values()) < 0:
            raise ValueError(f"a route mix needs non-negative weights and a positive total, got {mix}")
        routes, weights = zip(*sorted(mix.items()), strict=True)
        self.routes: tuple[str, ...] = routes
        self._cumulative = list(accumulate(weights))

    def draw(self, rng: random.Random) -> str:
        return rng.choices(self.routes, cum_weights=self._cumulative)[0]


class RouteClient:
    routes: frozenset[str] = frozenset()

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.acks: AckLog | None = None  # where acknowledged writes go (the generator sets it)
        self.clock: Callable[[], float] | None = None  # plan seconds (the generator sets it)
        self.keep_before_s = 0.0  # writes requested before this plan time are never deleted

    def now(self) -> float:
        return self.clock() if self.clock is not None else 0.0

    async def setup(self, session: aiohttp.ClientSession) -> None:
        """Prepare the target (log users in...) before the clock starts."""

    def call(self, route: str, rng: random.Random) -> Call | None:
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


SUBSTRATES = (*substrate_names(), "plain")


def route_client(substrate: str, target: str, routes: Iterable[str]) -> RouteClient:
    """The route client of a substrate, checked to know every route in `routes`."""
    if substrate == "plain":
        client: RouteClient = PlainClient(target, routes)
    elif substrate in substrate_names():
        client = driver_for(substrate).route_client(target)
    else:
        raise ValueError(f"unknown substrate {substrate!r} (known: {', '.join(SUBSTRATES)})")
    client.check_routes(routes)
    return client
