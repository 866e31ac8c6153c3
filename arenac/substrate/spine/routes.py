"""spine's route client: how the load generator issues each route of spine.

Contract: `SpineClient` (routes of library/substrates/spine/substrate.yaml) logs every seeded user
in during setup and keeps their tokens; each request draws a route from the mix, then a user and a
channel (the same draws, in the same order, as `arenac calibrate`); `login` and `send` are also
the harness's send burst (harness.py). `read` asks for the messages
after the highest seq it has seen sent to the channel minus 20. A send's text is `load N` (N counts
the client's sends), and when `acks` is set (an `AckLog`) every send answered 201 is recorded there
with the id and seq the answer returned (arenac/loadgen/acks.py). The load generator gets it from
spine's driver (`SubstrateDriver.route_client`).

`delete` deletes one of the client's own messages: every send answered 201 that was requested at or
after `keep_before_s` joins a pool of at most `POOL` messages (the oldest leaves first); a delete
takes one at random (drawn with the request's RNG after the user and channel, which it does not
use: the message's channel, seq and author are the pool's) and asks for it by its seq as its author.
With an empty pool `call` returns None (no request). The answer decides what is recorded in `acks`
(`AckLog.record_delete`): 200 -> every id it says it deleted, answered; no answer, 502 or 504 ->
the message meant, unanswered (the delete may have happened); 500 or 503 (the database refused,
nothing changed) -> nothing, and the message goes back to the pool; any other answer (403, 404:
someone else's doing) -> nothing, and the message is not asked for again.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import ClassVar

import aiohttp

from arenac.loadgen.acks import write_digest
from arenac.loadgen.routes import Call, RouteClient, SetupError
from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS


@dataclass(frozen=True)
class OwnMessage:
    """A message the client sent and was told was accepted: what a delete of it needs."""

    id: int
    channel: str
    seq: int
    author: str
    digest: str


# answers after which a delete may or may not have happened (the gateway gave up on the backend)
_UNKNOWN = (502, 504)
# answers of a database that refused: nothing was deleted and the message can be asked for again
_REFUSED_FOR_NOW = (500, 503)


class SpineClient(RouteClient):
    routes = frozenset({"login", "channels", "send", "read", "unread", "delete"})
    # (method, path) of each route, as in substrate.yaml (a test checks they agree)
    PATHS: ClassVar[dict[str, tuple[str, str]]] = {
        "login": ("POST", "/api/login"),
        "channels": ("GET", "/api/channels"),
        "send": ("POST", "/api/channels/{channel}/messages"),
        "read": ("GET", "/api/channels/{channel}/messages"),
        "unread": ("GET", "/api/unread"),
        "delete": ("DELETE", "/api/channels/{channel}/messages/{seq}"),
    }
    READ_BACK = 20
    POOL = 200  # own acknowledged sends kept for deleting

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.tokens: dict[str, str] = {}
        self.last_seq = {name: MESSAGES_PER_CHANNEL for name, _ in CHANNELS}
        self.sends = 0
        self.own: dict[int, OwnMessage] = {}  # id -> message, oldest first

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

    def call(self, route: str, rng: random.Random) -> Call | None:
        user, channel = rng.choice(USERS), rng.choice(CHANNELS)[0]
        if route == "delete":
            return self.delete(rng)
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
        requested = self.now()
        return Call(method, self.target + path.format(channel=channel), json={"text": text},
                    headers={"Authorization": f"Bearer {self.tokens[user]}"},
                    on_reply=lambda status, body: self._sent(channel, user, text, status, body, requested))

    def _sent(self, channel: str, user: str, text: str, status: int, body: bytes, requested: float) -> None:
        if status == 201:
            try:
                answer = json.loads(body)
                seq = int(answer["seq"])
            except (ValueError, KeyError, TypeError):
                return
            self.last_seq[channel] = max(self.last_seq[channel], seq)
            if answer.get("id") is None:
                return
            if self.acks is not None:
                self.acks.record(table="messages", id=int(answer["id"]), channel=channel, seq=seq, author=user,
                                 text=text)
            if requested >= self.keep_before_s:
                self._keep(OwnMessage(int(answer["id"]), channel, seq, user, write_digest(channel, user, text)))

    def _keep(self, message: OwnMessage) -> None:
        self.own[message.id] = message
        while len(self.own) > self.POOL:
            del self.own[next(iter(self.own))]

    def delete(self, rng: random.Random) -> Call | None:
        """A delete of one of the client's own messages, drawn from the pool; None when it is empty."""
        if not self.own:
            return None
        message = self.own.pop(list(self.own)[rng.randrange(len(self.own))])
        method, path = self.PATHS["delete"]
        requested = self.now()
        return Call(method, self.target + path.format(channel=message.channel, seq=message.seq),
                    headers={"Authorization": f"Bearer {self.tokens[message.author]}"},
                    on_reply=lambda status, body: self._deleted(message, requested, status, body),
                    on_error=lambda _kind: self._deleted(message, requested, 0, b""))

    def _deleted(self, message: OwnMessage, requested: float, status: int, body: bytes) -> None:
        if status in _REFUSED_FOR_NOW:
            self._keep(message)
            return
        ids: list[int] = []
        if status == 200:
            try:
                ids = [int(i) for i in json.loads(body)["deleted"]]
            except (ValueError, KeyError, TypeError):
                ids = [message.id]  # done, by the status; the ids it names cannot be read
        elif status != 0 and status not in _UNKNOWN:
            return  # refused for good (403, 404: the message is not ours to delete, or gone)
        if self.acks is None:
            return
        for id_ in ids or [message.id]:
            self.acks.record_delete(table="messages", id=id_, channel=message.channel, seq=message.seq,
                                    author=message.author, digest=message.digest if id_ == message.id else "",
                                    requested=requested, answered=status == 200)
