"""spine's route client: how the load generator issues each route of spine.

Contract: `SpineClient` (routes of library/substrates/spine/substrate.yaml) logs every seeded user
in during setup and keeps their tokens; each request draws a route from the mix, then a user and a
channel (the same draws, in the same order, as `arenac calibrate`); `login` and `send` are also
the harness's send burst (harness.py). `read` asks for the messages
after the highest seq it has seen sent to the channel minus 20. A send's text is `load N` (N counts
the client's sends), and when `acks` is set (an `AckLog`) every send answered 201 is recorded there
with the id and seq the answer returned (arenac/loadgen/acks.py). The load generator gets it from
spine's driver (`SubstrateDriver.route_client`).
"""

from __future__ import annotations

import json
import random
from typing import ClassVar

import aiohttp

from arenac.loadgen.routes import Call, RouteClient, SetupError
from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS


class SpineClient(RouteClient):
    routes = frozenset({"login", "channels", "send", "read", "unread"})
    # (method, path) of each route, as in substrate.yaml (a test checks they agree)
    PATHS: ClassVar[dict[str, tuple[str, str]]] = {
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
        for user in USERS:
            await self.login(session, user)

    async def login(self, session: aiohttp.ClientSession, user: str) -> None:
        """Log `user` in and keep the token; `SetupError` when the gateway will not."""
        method, path = self.PATHS["login"]
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
            return self.send(channel, user, f"load {self.sends}")
        if route == "read":
            after = max(0, self.last_seq[channel] - self.READ_BACK)
            return Call(method, url, params={"after": str(after)}, headers=auth)
        return Call(method, url, headers=auth)

    def send(self, channel: str, user: str, text: str) -> Call:
        """`user` (logged in) sends `text` to `channel`; an answer 201 is recorded in `acks`."""
        method, path = self.PATHS["send"]
        return Call(method, self.target + path.format(channel=channel), json={"text": text},
                    headers={"Authorization": f"Bearer {self.tokens[user]}"},
                    on_reply=lambda status, body: self._sent(channel, user, text, status, body))

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
