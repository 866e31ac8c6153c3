"""The spine route client: its routes are the descriptor's, and a healthy stack under load gives a
clean ledger."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from arenac.loadgen import load_ledger, run_load
from arenac.loadgen.acks import AckLog, read_acks, write_digest
from arenac.loadgen.routes import RouteMix
from arenac.substrate.spine.routes import SpineClient
from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS, substrate_file
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from loadgen.stub import profile
from substrate.spine_client import assert_gone, ports_of

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

# spine's `light` profile, with every route equally likely so that a short run sees them all
LIGHT = profile([("peak", 20, 30), ("trough", 20, 10)], {"send": 1, "read": 1, "unread": 1, "login": 1, "channels": 1},
                warmup=(10, 10))


def test_spine_routes_are_the_descriptors() -> None:
    descriptor = yaml.safe_load(substrate_file("substrate.yaml").read_text())
    assert {r["name"]: (r["method"], r["path"]) for r in descriptor["routes"]} == SpineClient.PATHS
    assert SpineClient.routes == set(SpineClient.PATHS)


def test_spine_calls_make_calibrates_draws_in_its_order() -> None:
    """Route, then user, then channel, from one seeded RNG (as `arenac calibrate` draws them), so
    a seed gives the same requests as the baseline's run with that seed."""
    client = SpineClient("http://gw")
    client.tokens = {user: f"token-{user}" for user in USERS}
    mix, rng, reference = RouteMix(dict(LIGHT.mix)), random.Random(3), random.Random(3)
    routes, weights = zip(*sorted(LIGHT.mix.items()), strict=True)
    seen, sends = set(), 0
    for _ in range(300):
        route = mix.draw(rng)
        call = client.call(route, rng)
        sends += route == "send"
        assert route == reference.choices(routes, weights)[0]
        user, channel = reference.choice(USERS), reference.choice(CHANNELS)[0]
        method, path = SpineClient.PATHS[route]
        assert (call.method, call.url) == (method, "http://gw" + path.format(channel=channel))
        auth = {"Authorization": f"Bearer token-{user}"}
        expected = {"login": (None, {"user": user}, None), "channels": (None, None, None),
                    "send": (auth, {"text": f"load {sends}"}, None), "read": (auth, None, {"after": "20"}),
                    "unread": (auth, None, None)}[route]
        assert (call.headers, call.json, call.params) == expected
        seen.add(route)
    assert seen == set(LIGHT.mix)
    sent = client.call("send", random.Random(1))
    assert sent.on_reply is not None
    sent.on_reply(201, b'{"seq": 77}')
    assert max(client.last_seq.values()) == 77  # later reads ask for what was sent


def test_spine_sends_answered_201_are_recorded_as_acknowledged_writes(tmp_path: Path) -> None:
    client = SpineClient("http://gw")
    client.tokens = {user: f"token-{user}" for user in USERS}
    client.acks = AckLog(tmp_path / "acks.jsonl", clock=lambda: 3.5)
    first, second, third = (client.call("send", random.Random(seed)) for seed in (1, 2, 3))
    first.on_reply(201, b'{"seq": 41, "id": 201, "channel": "x"}')
    second.on_reply(503, b'{"error": "busy"}')  # refused: not acknowledged
    third.on_reply(201, b'{"seq": 42}')  # no id: nothing to check it by
    client.acks.flush()
    (ack,) = read_acks(tmp_path / "acks.jsonl")
    user, channel = (lambda r: (r.choice(USERS), r.choice(CHANNELS)[0]))(random.Random(1))
    assert ack == {"t": 3.5, "source": "load", "table": "messages", "id": 201, "channel": channel, "seq": 41,
                   "author": user, "digest": write_digest(channel, user, "load 1")}


@pytest.fixture
def spine(tmp_path: Path) -> Iterator[SpineStack]:
    stack = SpineStack(tmp_path / "stack", SpineSpec().with_sets(["TIME_SCALE=0.05"]))
    stack.start()
    endpoints, pids = stack.endpoints, list(stack.pids().values())
    try:
        yield stack
    finally:
        stack.stop()
        assert endpoints is not None
        assert_gone(pids, ports_of(endpoints))


def test_a_healthy_spine_under_load_has_a_clean_ledger(spine: SpineStack, tmp_path: Path) -> None:
    assert spine.endpoints is not None
    clients: list[SpineClient] = []

    def factory(target: str) -> SpineClient:
        clients.append(SpineClient(target))
        return clients[-1]

    # the warm-up and one cycle at time scale 0.05, cycles anchored like the maintenance windows
    summary = run_load(LIGHT, spine.endpoints.gateway, 0.05, None, tmp_path / "ledger.json", cycles=1,
                       anchor_unix=0.0, client_factory=factory)
    ledger = load_ledger(tmp_path / "ledger.json")
    errors = [(e["t"], e["route"], e["errors"]) for e in ledger["seconds"] if e["errors"]]
    assert not errors, (errors, summary.error_kinds)
    assert {e["route"] for e in ledger["seconds"]} == set(LIGHT.mix)
    assert {p["name"] for p in ledger["phases"]} == {"warmup", "peak", "trough"}
    assert summary.requests >= 10 * 10 * 0.05 + 20 * 30 * 0.05 + 20 * 10 * 0.05
    assert max(clients[0].last_seq.values()) > MESSAGES_PER_CHANNEL  # sends were seen, reads follow them
