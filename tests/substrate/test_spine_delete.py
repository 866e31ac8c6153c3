"""The `delete` route on a running stack: an author deletes their own message through the gateway
(the application role's DELETE privilege on messages), nobody else's, and a revoked DELETE makes the
route fail with the database's permission error, as a revoked INSERT does to sends."""

from __future__ import annotations

import pytest

from substrate.spine_client import Reply, Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def delete(spine: Spine, channel: str, seq: int | str, token: str | None) -> Reply:
    return http("DELETE", f"{spine.ep.gateway}/api/channels/{channel}/messages/{seq}", token=token)


def seqs(spine: Spine, channel: str, token: str) -> list[int]:
    reply = spine.read(channel, 0, token)
    assert reply.status == 200, reply
    return [m["seq"] for m in reply.body["messages"]]


def test_an_author_deletes_their_own_message_and_no_one_elses(healthy: Spine) -> None:
    ada, alan = healthy.login("ada"), healthy.login("alan")
    sent = healthy.send("ops", "to be deleted", ada)
    assert sent.status == 201, sent
    seq, id_ = sent.body["seq"], sent.body["id"]

    assert (r := delete(healthy, "ops", seq, alan)).status == 403 and r.body["error"] == "not_author", r
    assert delete(healthy, "ops", seq, None).status == 401  # the gateway asks for a token, as for send
    assert seq in seqs(healthy, "ops", ada)

    done = delete(healthy, "ops", seq, ada)
    assert (done.status, done.body) == (200, {"channel": "ops", "seq": seq, "deleted": [id_]}), done
    assert seq not in seqs(healthy, "ops", ada)
    assert not healthy.sql("SELECT 1 FROM messages WHERE id = $1", id_)

    gone = delete(healthy, "ops", seq, ada)  # twice: nothing there any more
    assert (gone.status, gone.body["error"]) == (404, "unknown_message"), gone
    assert delete(healthy, "ops", 10**9, ada).status == 404
    assert delete(healthy, "nowhere", 1, ada).body["error"] == "unknown_channel"
    assert delete(healthy, "ops", "first", ada).status == 400

    after = healthy.send("ops", "the next one", ada)
    assert after.body["seq"] == seq + 1  # a deleted seq is not handed out again: it stays a hole


def test_the_delete_route_is_measured_as_delete(healthy: Spine) -> None:
    ada = healthy.login("ada")
    seq = healthy.send("sales", "measured", ada).body["seq"]
    assert delete(healthy, "sales", seq, ada).status == 200
    for service in ("gateway", "message"):
        metrics = http("GET", healthy.ep.services[service] + "/metrics").body
        assert 'spine_http_requests_total{route="delete",status="200"}' in metrics, service


def test_a_revoked_delete_grant_makes_deletes_fail_and_nothing_else(healthy: Spine) -> None:
    ada = healthy.login("ada")
    seq = healthy.send("random", "kept while DELETE is revoked", ada).body["seq"]
    healthy.sql("REVOKE DELETE ON messages FROM spine_app", role="spine_operator")
    try:
        failed = delete(healthy, "random", seq, ada)
        sent = healthy.send("random", "sends still work", ada)
    finally:
        healthy.sql("GRANT DELETE ON messages TO spine_app", role="spine_operator")
    assert (failed.status, failed.body["error"]) == (500, "database:42501"), failed
    assert sent.status == 201 and seq in seqs(healthy, "random", ada)
    assert delete(healthy, "random", seq, ada).status == 200
