"""The load generator's deletes: spine's route client deletes only messages it sent itself and was
told were accepted (a bounded pool, none requested before `keep_before_s`), records each delete in
its ledger of acknowledged writes by what the answer said, and an arrival with nothing to delete
starts no request."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from pathlib import Path

import pytest

from arenac.loadgen.acks import AckLog, read_acks, write_digest
from arenac.loadgen.generator import KEEP_AFTER_WARMUP_REAL_S, Generator
from arenac.loadgen.routes import Call, RouteClient
from arenac.model.evidence import AckedWrite
from arenac.substrate.spine.routes import SpineClient
from arenac.substrate.spine.seed import CHANNELS, USERS
from loadgen.stub import StubServer, profile


class Clock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def client(tmp_path: Path, clock: Clock, keep_before_s: float = 0.0) -> SpineClient:
    spine = SpineClient("http://gw")
    spine.tokens = {user: f"token-{user}" for user in USERS}
    spine.acks = AckLog(tmp_path / "acks.jsonl", clock=clock)
    spine.clock, spine.keep_before_s = clock, keep_before_s
    return spine


def accepted(spine: SpineClient, seed: int, id_: int, seq: int) -> Call:
    """A send, answered 201 with ID and SEQ."""
    call = spine.call("send", random.Random(seed))
    assert call is not None and call.on_reply is not None
    call.on_reply(201, json.dumps({"seq": seq, "id": id_, "channel": "x"}).encode())
    return call


def lines(tmp_path: Path, spine: SpineClient) -> list[dict]:
    assert spine.acks is not None
    spine.acks.flush()
    return read_acks(tmp_path / "acks.jsonl")


def test_nothing_to_delete_before_an_accepted_send_of_its_own(tmp_path):
    spine = client(tmp_path, Clock())
    assert spine.call("delete", random.Random(1)) is None
    refused = spine.call("send", random.Random(1))
    assert refused is not None and refused.on_reply is not None
    refused.on_reply(503, b'{"error": "db_pool_timeout"}')
    assert spine.call("delete", random.Random(1)) is None


def test_a_delete_asks_for_an_own_message_by_its_seq_as_its_author(tmp_path):
    clock = Clock(30.0)
    spine = client(tmp_path, clock)
    send = accepted(spine, 5, id_=901, seq=57)
    user, channel = (lambda r: (r.choice(USERS), r.choice(CHANNELS)[0]))(random.Random(5))
    assert send.url == f"http://gw/api/channels/{channel}/messages"
    clock.t = 31.5
    call = spine.call("delete", random.Random(9))
    assert call is not None and call.on_reply is not None
    assert (call.method, call.url) == ("DELETE", f"http://gw/api/channels/{channel}/messages/57")
    assert call.headers == {"Authorization": f"Bearer token-{user}"}  # the author's, whoever the draw named
    clock.t = 31.52
    call.on_reply(200, json.dumps({"channel": channel, "seq": 57, "deleted": [901]}).encode())
    write, deleted = lines(tmp_path, spine)
    assert write["id"] == 901 and "op" not in write
    assert deleted == {"op": "delete", "t": 31.52, "requested": 31.5, "answered": True, "source": "load",
                       "table": "messages", "id": 901, "channel": channel, "seq": 57, "author": user,
                       "digest": write_digest(channel, user, "load 1")}
    assert AckedWrite.model_validate(deleted).op == "delete"
    assert spine.call("delete", random.Random(9)) is None  # it is asked for once


def test_every_id_the_answer_names_is_recorded(tmp_path):
    """A faulty sequencer gave two of the author's messages one seq: the answer names both."""
    spine = client(tmp_path, Clock(40.0))
    accepted(spine, 5, id_=901, seq=57)
    call = spine.call("delete", random.Random(1))
    assert call is not None and call.on_reply is not None
    call.on_reply(200, b'{"deleted": [901, 907]}')
    deleted = [line for line in lines(tmp_path, spine) if line.get("op") == "delete"]
    assert [(d["id"], d["answered"], bool(d["digest"])) for d in deleted] == [(901, True, True), (907, True, False)]


def test_no_answer_is_recorded_as_a_delete_that_may_have_happened(tmp_path):
    spine = client(tmp_path, Clock(40.0))
    for seed, id_ in ((5, 901), (6, 902)):
        accepted(spine, seed, id_=id_, seq=id_ - 800)
    timed_out = spine.call("delete", random.Random(1))
    gateway_gave_up = spine.call("delete", random.Random(1))
    assert timed_out is not None and timed_out.on_error is not None
    assert gateway_gave_up is not None and gateway_gave_up.on_reply is not None
    timed_out.on_error("timeout")
    gateway_gave_up.on_reply(504, b'{"error": "upstream_timeout"}')
    deleted = [line for line in lines(tmp_path, spine) if line.get("op") == "delete"]
    assert sorted((d["id"], d["answered"]) for d in deleted) == [(901, False), (902, False)]


def test_a_refusal_records_nothing_and_a_database_refusal_keeps_the_message_for_later(tmp_path):
    spine = client(tmp_path, Clock(40.0))
    accepted(spine, 5, id_=901, seq=101)
    refused = spine.call("delete", random.Random(1))
    assert refused is not None and refused.on_reply is not None
    refused.on_reply(500, b'{"error": "database:42501"}')  # DELETE revoked: the row stays
    assert list(spine.own) == [901]
    again = spine.call("delete", random.Random(1))
    assert again is not None and again.on_reply is not None
    again.on_reply(404, b'{"error": "unknown_message"}')  # gone, by someone else's hand: not ours to record
    assert not spine.own and spine.call("delete", random.Random(1)) is None
    assert all("op" not in line for line in lines(tmp_path, spine))


def test_sends_requested_before_keep_before_are_never_deleted(tmp_path):
    """The baseline snapshot's checksum covers what the warm-up wrote: a deletion would change it."""
    clock = Clock(29.9)
    spine = client(tmp_path, clock, keep_before_s=30.0)
    early = spine.call("send", random.Random(1))  # requested before, answered after
    clock.t = 30.2
    assert early is not None and early.on_reply is not None
    early.on_reply(201, b'{"seq": 41, "id": 500}')
    assert spine.call("delete", random.Random(1)) is None
    accepted(spine, 2, id_=501, seq=42)
    assert list(spine.own) == [501]


def test_the_pool_keeps_the_newest_messages(tmp_path):
    spine = client(tmp_path, Clock(40.0))
    for n in range(SpineClient.POOL + 25):
        accepted(spine, n, id_=1000 + n, seq=41 + n)
    assert len(spine.own) == SpineClient.POOL and min(spine.own) == 1025


def test_the_other_routes_draw_as_before(tmp_path):
    """A delete adds its own draw after the user and channel; a profile without deletes draws as before."""
    spine, reference = client(tmp_path, Clock()), random.Random(4)
    rng = random.Random(4)
    spine.call("read", rng)
    assert rng.random() == (reference.choice(USERS), reference.choice(CHANNELS), reference.random())[2]


class _Nothing(RouteClient):
    """A route that never has anything to act on, beside one that always does."""

    routes = frozenset({"ok", "idle"})

    def call(self, route: str, rng: random.Random) -> Call | None:
        return Call("GET", f"{self.target}/ok") if route == "ok" else None


@pytest.mark.live  # timed load (two seconds, against the stub server)
def test_an_arrival_with_nothing_to_act_on_starts_no_request(tmp_path, stub: StubServer):
    load = profile([("peak", 2, 50)], {"ok": 1, "idle": 1})
    nothing = _Nothing(stub.url)
    generator = Generator(load, nothing, 1.0, duration_s=2.0, out=tmp_path / "ledger.json",
                          stop_event=threading.Event())
    summary = asyncio.run(generator.run())
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    assert {s["route"] for s in ledger["seconds"]} == {"ok"}
    assert summary.requests == stub.requests == sum(s["count"] for s in ledger["seconds"]) < 100
    assert nothing.clock is not None and nothing.keep_before_s == KEEP_AFTER_WARMUP_REAL_S  # no warm-up: 0 + 1 s
