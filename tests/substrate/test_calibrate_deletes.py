"""`arenac calibrate` issues every route the way an episode's load generator does, deletes included:
its generator (arenac/substrate/calibrate.py `LoadGenerator`) makes each request with spine's own route
client, against a gateway. Here the gateway is a small real HTTP server on loopback that answers as
spine's does for the routes a `send`+`delete` mix uses (not a spine stack: no database behind it)."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from aiohttp import web

from arenac.model.library import LoadProfile, Phase
from arenac.substrate.calibrate import LoadGenerator


class _Gateway:
    """Accepts sends (201 with an id and seq per channel), deletes of a message it accepted from its
    own author (200, else 404), and logins; remembers every delete it was asked for."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.seqs: dict[str, itertools.count] = {}
        self.messages: dict[tuple[str, int], str] = {}  # (channel, seq) -> author
        self.deletes: list[tuple[str, int, bool]] = []  # (channel, seq, was it one of the sender's own)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/channels/{channel}/messages", self.send)
        app.router.add_delete("/api/channels/{channel}/messages/{seq}", self.delete)
        return app

    async def login(self, request: web.Request) -> web.Response:
        return web.json_response({"token": (await request.json())["user"]})

    async def send(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel"]
        seq = next(self.seqs.setdefault(channel, itertools.count(1)))
        self.messages[(channel, seq)] = request.headers["Authorization"].removeprefix("Bearer ")
        return web.json_response({"id": next(self.ids), "seq": seq}, status=201)

    async def delete(self, request: web.Request) -> web.Response:
        key = (request.match_info["channel"], int(request.match_info["seq"]))
        author = request.headers["Authorization"].removeprefix("Bearer ")
        own = self.messages.get(key) == author
        self.deletes.append((*key, own))
        if not own:
            return web.json_response({"error": "not found"}, status=404)
        del self.messages[key]
        return web.json_response({"deleted": [0]})


async def _calibrate_against(gateway: _Gateway, profile: LoadProfile) -> list:
    runner = web.AppRunner(gateway.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        result = await LoadGenerator(f"http://127.0.0.1:{port}", profile, time_scale=1.0, cycles=1, seed=5).run()
    finally:
        await runner.cleanup()
    return result.samples


def test_calibration_deletes_the_clients_own_sends_and_records_them():
    profile = LoadProfile(name="deletes", warmup=Phase(name="warmup", duration_s=0.2, rate=40),
                          phases=(Phase(name="peak", duration_s=1, rate=80),), mix={"send": 2, "delete": 1})
    gateway = _Gateway()
    samples = asyncio.run(_calibrate_against(gateway, profile))
    deletes = [s for s in samples if s.route == "delete"]
    assert deletes and all(s.status == 200 for s in deletes), {s.status for s in deletes}
    # every delete asked for a message the client itself had sent, as its author, and each one once
    assert gateway.deletes and all(own for _, _, own in gateway.deletes)
    assert len({(c, s) for c, s, _ in gateway.deletes}) == len(gateway.deletes) == len(deletes)
    assert {s.route for s in samples} == {"send", "delete"}


def test_a_profile_naming_a_route_spine_lacks_is_refused():
    profile = LoadProfile(name="odd", warmup=None, phases=(Phase(name="peak", duration_s=1, rate=1),),
                          mix={"purge": 1})
    with pytest.raises(ValueError, match="spine has no route purge; profile 'odd' names it in its mix"):
        LoadGenerator("http://127.0.0.1:9", profile, time_scale=1.0)

