"""Each knob a fault turns has its real effect on a running stack, and the healthy setting does not.

Tests on the shared `healthy` stack undo what they change (run-time changes by /admin/reload,
database changes by the inverse statement, Redis changes by CONFIG/ACL), so their order does not
matter; the ones that need another deployment start their own stack.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable

import asyncpg
import pytest
import redis
import yaml

from arenac.substrate.spine.spec import SpineSpec
from substrate.spine_client import Reply, Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def statuses(replies: list[Reply]) -> Counter[int]:
    return Counter(reply.status for reply in replies)


def channel_seqs(spine: Spine, channel: str) -> list[int]:
    rows = spine.sql("SELECT m.seq FROM messages m JOIN channels c ON c.id = m.channel_id WHERE c.name = $1", channel)
    return [row["seq"] for row in rows]


def test_tiny_pool_times_out_under_concurrent_sends(healthy: Spine) -> None:
    token = healthy.login()
    assert statuses(healthy.concurrent_sends("eng", 200, token)) == {201: 200}
    healthy.admin("message", "/admin/config",
                  {"DB_POOL_SIZE": "1", "DB_POOL_OVERFLOW": "0", "DB_POOL_TIMEOUT_MS": "50"})
    try:
        replies = healthy.concurrent_sends("eng", 200, token)
    finally:
        healthy.admin("message", "/admin/reload", {})
    failed = [r for r in replies if r.status != 201]
    assert len(failed) >= 20, statuses(replies)
    assert {(r.status, r.body["error"]) for r in failed} == {(503, "db_pool_timeout")}
    assert statuses(healthy.concurrent_sends("eng", 200, token)) == {201: 200}


def test_rmw_sequencer_duplicates_under_concurrency_atomic_never(healthy: Spine) -> None:
    token = healthy.login()
    healthy.admin("message", "/admin/config", {"SEQUENCER_MODE": "rmw"})
    try:
        replies = healthy.concurrent_sends("random", 60, token)
    finally:
        healthy.admin("message", "/admin/reload", {})
    assert statuses(replies) == {201: 60}
    duplicated = [seq for seq, n in Counter(channel_seqs(healthy, "random")).items() if n > 1]
    assert duplicated, "rmw under 60 concurrent sends gave no duplicate seq"

    replies = healthy.concurrent_sends("eng", 60, token)
    assert statuses(replies) == {201: 60}
    seqs = channel_seqs(healthy, "eng")
    assert sorted(seqs) == list(range(1, len(seqs) + 1)), "atomic seqs are not dense and unique"


def test_harness_send_burst_triggers_rmw_duplicates_and_not_atomic_ones(healthy: Spine) -> None:
    """The sequencer_rmw template's trigger: the harness's send burst duplicates seqs under rmw
    and leaves atomic seqs dense and unique."""
    from arenac.runner.harness_io import HarnessIO
    from arenac.substrate.spine.driver import DRIVER

    io = HarnessIO(healthy.ep, DRIVER)
    try:
        healthy.admin("message", "/admin/config", {"SEQUENCER_MODE": "rmw"})
        try:
            assert io.send_burst("ops", 40, 8) == {"accepted": 40, "refused": 0}
        finally:
            healthy.admin("message", "/admin/reload", {})
        assert max(Counter(channel_seqs(healthy, "ops")).values()) > 1
        assert io.send_burst("general", 40, 8) == {"accepted": 40, "refused": 0}
    finally:
        io.close()
    seqs = channel_seqs(healthy, "general")
    assert sorted(seqs) == list(range(1, len(seqs) + 1))


def test_release_150_ignores_sequencer_mode(healthy: Spine) -> None:
    """A release is deployed locally by editing the config file's RELEASE and restarting."""
    path = healthy.stack.config_path("message")
    original = path.read_text()
    path.write_text(yaml.safe_dump({**yaml.safe_load(original), "RELEASE": "1.5.0"}))
    try:
        assert healthy.admin("message", "/admin/reload", {}).body["pending_restart"] == ["RELEASE"]
        healthy.stack.restart_service("message")
        view = healthy.admin("message", "/admin/config").body
        assert (view["release"], view["config"]["SEQUENCER_MODE"]) == ("1.5.0", "atomic")
        assert statuses(healthy.concurrent_sends("sales", 60, healthy.login())) == {201: 60}
        assert max(Counter(channel_seqs(healthy, "sales")).values()) > 1
    finally:
        path.write_text(original)
        healthy.stack.restart_service("message")
    assert healthy.admin("message", "/admin/config").body["release"] == "1.4.2"


def fastest(request: Callable[[], Reply], tries: int = 3) -> float:
    """The fastest of a few requests: what one costs without the machine's own hiccups (a single
    send of 189 ms was seen in CI), which a hold of 300 ms on every request still exceeds."""
    return min(request().seconds for _ in range(tries))


def test_strict_read_event_adds_the_hold_then_timeouts(healthy: Spine) -> None:
    token = healthy.login()
    assert fastest(lambda: healthy.read("general", 30, token)) < 0.15
    healthy.admin("channel", "/admin/config", {"READ_CONSISTENCY_HOLD_MS": "300"})
    healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": True})
    try:
        held = healthy.read("general", 30, token)
        assert held.status == 200 and 0.3 <= held.seconds < 1.5
        # the hold keeps a pooled connection busy: under concurrency the pool runs dry
        healthy.admin("channel", "/admin/config",
                      {"DB_POOL_SIZE": "2", "DB_POOL_OVERFLOW": "0", "DB_POOL_TIMEOUT_MS": "500"})
        replies = healthy.burst("GET", "/api/channels/general/messages?after=30", 20, token)
        assert statuses(replies)[503] >= 5, statuses(replies)
    finally:
        healthy.admin("channel", "/admin/reload", {})  # the config; the event outlives a reload
        healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": False})
    assert fastest(lambda: healthy.read("general", 30, token)) < 0.15


def test_strict_read_event_holds_the_login_lookup_too(healthy: Spine) -> None:
    """auth's requests read the database (the login's user lookup): the event holds them as
    channel's reads, and only auth's logins (reads stay fast)."""
    login = lambda: http("POST", healthy.ep.gateway + "/api/login", {"user": "ada"})  # noqa: E731
    assert fastest(login) < 0.15
    healthy.admin("auth", "/admin/config", {"READ_CONSISTENCY_HOLD_MS": "300"})
    healthy.admin("auth", "/admin/event", {"name": "read_consistency_strict", "on": True})
    try:
        held = login()
        assert held.status == 200 and 0.3 <= held.seconds < 1.5
        token = held.body["token"]
        assert fastest(lambda: healthy.read("general", 30, token)) < 0.15
    finally:
        healthy.admin("auth", "/admin/reload", {})  # the config; the event outlives a reload
        healthy.admin("auth", "/admin/event", {"name": "read_consistency_strict", "on": False})
    assert fastest(login) < 0.15
    assert healthy.admin("auth", "/admin/event").body == {"events": {"read_consistency_strict": False}}


def test_revoked_insert_grant_makes_sends_fail(healthy: Spine) -> None:
    token = healthy.login()
    healthy.sql("REVOKE INSERT ON messages FROM spine_app", role="spine_operator")
    try:
        failed = healthy.send("ops", "denied", token)
    finally:
        healthy.sql("GRANT INSERT ON messages TO spine_app", role="spine_operator")
    assert (failed.status, failed.body["error"]) == (500, "database:42501")
    assert healthy.send("ops", "allowed again", token).status == 201


def hold_sequencer_row(spine: Spine, channel_id: int, seconds: float) -> threading.Thread:
    """Lock a channel's sequencer row from an operator session for `seconds` (in a thread)."""
    locked = threading.Event()

    async def hold() -> None:
        conn = await asyncpg.connect(spine.ep.postgres["spine_operator"])
        try:
            async with conn.transaction():
                await conn.execute("SELECT 1 FROM channels WHERE id = $1 FOR UPDATE", channel_id)
                locked.set()
                await asyncio.sleep(seconds)
        finally:
            await conn.close()

    thread = threading.Thread(target=lambda: asyncio.run(hold()))
    thread.start()
    assert locked.wait(10)
    return thread


def test_role_statement_timeout_applies_to_new_connections_only(healthy: Spine) -> None:
    token = healthy.login()
    healthy.sql("ALTER ROLE spine_app SET statement_timeout = '300ms'", role="spine_operator")
    try:
        holder = hold_sequencer_row(healthy, 3, 1.0)  # eng
        waited = healthy.send("eng", "old connection", token)
        holder.join()
        assert waited.status == 201 and waited.seconds >= 0.8  # pooled sessions predate the setting
        healthy.stack.restart_service("message")  # new pool, new sessions
        holder = hold_sequencer_row(healthy, 3, 1.0)
        cancelled = healthy.send("eng", "new connection", token)
        holder.join()
        assert (cancelled.status, cancelled.body["error"]) == (503, "statement_timeout")
        assert cancelled.seconds < 0.8
    finally:
        healthy.sql("ALTER ROLE spine_app RESET statement_timeout", role="spine_operator")
        healthy.stack.restart_service("message")
    assert healthy.send("eng", "healthy", token).status == 201


def test_fanout_acl_denial_grows_the_backlog(healthy: Spine) -> None:
    token = healthy.login()
    admin = redis.Redis.from_url(healthy.ep.redis_harness)
    admin.execute_command("ACL", "SETUSER", "fanout", "-rpop")
    try:
        for i in range(10):
            assert healthy.send("general", f"acl {i}", token).status == 201
        time.sleep(1.0)
        assert healthy.backlog() >= 10
        assert "NoPermission" in healthy.admin("fanout", "/admin/backlog").body["last_error"]
    finally:
        admin.execute_command("ACL", "SETUSER", "fanout", "+rpop")
    healthy.wait_for(lambda: healthy.backlog() == 0, 10, "the backlog to drain")


def test_small_redis_maxmemory_stalls_fanout(make_stack) -> None:
    spine = make_stack(SpineSpec().with_sets(["redis.maxmemory=1mb"]))
    admin = redis.Redis.from_url(spine.ep.redis_harness)
    assert admin.config_get("maxmemory")["maxmemory"] == str(2**20)
    token = spine.login()
    # three bursts of 50: each send Redis refuses is parked in PostgreSQL, and one burst of 150 on a
    # busy machine timed out on the message service's pool (503), which is not what this tests
    replies = [reply for _ in range(3) for reply in spine.concurrent_sends("general", 50, token)]
    assert statuses(replies) == {201: 150}  # messages are committed; only fan-out is late
    time.sleep(1.5)
    stalled = spine.backlog()
    time.sleep(1.0)
    assert spine.backlog() >= stalled > 0, "fan-out did not stall"
    admin.config_set("maxmemory", "256mb")
    spine.wait_for(lambda: spine.backlog() == 0, 15, "the backlog to drain once Redis has memory")


def test_maintenance_window_gives_periodic_send_stalls(make_stack) -> None:
    # period 15 s, offset 5 s, duration 5 s at TIME_SCALE 0.2: a 1 s window every 3 s, at 1 s
    spec = SpineSpec().with_sets(["TIME_SCALE=0.2", "MAINT_PERIOD_S=15", "MAINT_OFFSET_S=5", "MAINT_DURATION_S=5"])
    spine = make_stack(spec)
    token = spine.login()
    probes: list[tuple[float, float]] = []
    failed = []
    end = time.time() + 7.0
    while time.time() < end:
        started = time.time()
        reply = spine.send("eng", "probe", token)
        if reply.status == 201:
            probes.append((started, time.time() - started))
        else:
            failed.append((reply.status, reply.body))
        time.sleep(0.03)
    # a stall delays sends, it does not fail them; one failure in ~150 probes is tolerated (seen
    # once in CI on a loaded machine: 500 database:08003, a connection closed mid-query)
    assert len(failed) <= 1, failed
    period, offset, duration = 3.0, 1.0, 1.0
    in_window = [(t, s) for t, s in probes if offset - 0.05 <= t % period <= offset + duration + 0.05]
    outside = [s for t, s in probes if (t, s) not in in_window]
    # a stall is a send held behind a batch's locks: up to a slice (1 s), the whole window here;
    # half a slice tells it from the machine's own hiccups (seen in CI: 189 ms outside a window)
    slow = [(t, s) for t, s in probes if s > 0.5]
    assert len({int(t // period) for t, _ in slow}) >= 2, "expected stalls in at least two windows"
    assert sum(1 for t, s in slow if (t, s) in in_window) >= 0.8 * len(slow), (slow, probes)
    assert sorted(outside)[int(len(outside) * 0.9)] < 0.1
    windows = spine.admin("maintenance", "/admin/windows").body["windows"]
    # windows start on the schedule; the job may wake a few ms late on a loaded machine
    starts = [w["start"] % period for w in windows if "error" not in w][-2:]
    assert len(starts) == 2 and all(abs(start - offset) < 0.05 for start in starts), starts
    # what the harness samples as runs(maintenance): the windows that ran to their CHECKPOINT
    body = spine.admin("maintenance", "/admin/windows").body
    assert body["completed"] == len([w for w in body["windows"] if "error" not in w]) >= 2
    # a zero duration still runs the job (one batch: the statistics refreshed), so it is a run
    spine.admin("maintenance", "/admin/config", {"MAINT_DURATION_S": "0"})
    done = body["completed"]
    spine.wait_for(lambda: spine.admin("maintenance", "/admin/windows").body["completed"] >= done + 2, 10,
                   "two zero-duration runs")


def test_leaked_transaction_blocks_the_channel_until_ended(healthy: Spine) -> None:
    """Release 1.5.1 leaves a session idle in transaction holding the channel's sequencer row."""
    path = healthy.stack.config_path("message")
    original = path.read_text()
    path.write_text(yaml.safe_dump({**yaml.safe_load(original), "RELEASE": "1.5.1"}))
    # long enough that a loaded CI machine never times out a healthy send (seen at 1000 ms)
    healthy.admin("gateway", "/admin/config", {"UPSTREAM_TIMEOUT_MS": "3000"})
    # a maintenance window locks every channel's row in id order: behind the leak it would hold the
    # other channels too (seen in CI), and even a window of no duration takes those locks once; so
    # the next window is moved half an hour away and a running one is let finish
    healthy.admin("maintenance", "/admin/config", {"MAINT_PERIOD_S": "3600", "MAINT_DURATION_S": "0",
                                                   "MAINT_OFFSET_S": str(round((time.time() + 1800) % 3600))})
    healthy.wait_for(lambda: not healthy.admin("maintenance", "/admin/windows").body["active"], 15,
                     "the running maintenance window to end")
    token = healthy.login()
    try:
        healthy.stack.restart_service("message")
        seq = healthy.send("ops", "before", token).body["seq"]
        while seq % 20:  # the leak follows the send that takes a multiple of 20
            seq = healthy.send("ops", "to the leak", token).body["seq"]
        blocked = healthy.send("ops", "blocked", token)
        assert (blocked.status, blocked.body["error"]) == (504, "upstream_timeout")
        # another channel is not held by the leak; under CI load one send may still time out behind
        # the blocked one, so it gets three tries (the leak itself never lets any through)
        tries = []
        for _ in range(3):
            tries.append(healthy.send("random", "other channel", token))
            if tries[-1].status == 201:
                break
        assert tries[-1].status == 201, [(t.status, t.body, round(t.seconds, 2)) for t in tries]
        idle = healthy.sql("SELECT pid FROM pg_stat_activity WHERE usename = 'spine_app'"
                           " AND state = 'idle in transaction'", role="spine_operator")
        assert len(idle) == 1
        # the operator's repairs: end the session now, and let PostgreSQL end future ones
        healthy.sql("SELECT pg_terminate_backend($1)", idle[0]["pid"], role="spine_operator")
        healthy.sql("ALTER DATABASE spine SET idle_in_transaction_session_timeout = '1s'", role="spine_operator")
        seq = healthy.send("ops", "after terminate", token).body["seq"]
        while seq % 20:
            seq = healthy.send("ops", "to the next leak", token).body["seq"]
        time.sleep(1.5)  # the new leaked session outlives the timeout and is ended by PostgreSQL
        assert healthy.send("ops", "after timeout", token).body["seq"] == seq + 1
    finally:
        healthy.sql("ALTER DATABASE spine RESET idle_in_transaction_session_timeout", role="spine_operator")
        path.write_text(original)
        healthy.stack.restart_service("message")
        healthy.admin("gateway", "/admin/reload", {})
        healthy.admin("maintenance", "/admin/reload", {})


def test_db_role_switch_takes_a_new_pool(healthy: Spine) -> None:
    token = healthy.login()
    assert healthy.admin("message", "/admin/config", {"DB_ROLE": "spine_readonly"}).status == 200
    try:
        denied = healthy.send("general", "as readonly", token)
        assert (denied.status, denied.body["error"]) == (500, "database:42501")
        refused = healthy.admin("message", "/admin/config", {"DB_ROLE": "nobody"})
        assert (refused.status, refused.body["error"]) == (503, "pool_rebuild_failed")
    finally:
        healthy.admin("message", "/admin/reload", {})
    assert healthy.send("general", "as the app again", token).status == 201
