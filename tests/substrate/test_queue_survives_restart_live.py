"""Live: "queued work survives a broker restart" on a real spine stack, both sides. Sends are
delivered, then the fan-out worker is denied the queue (a run-time ACL rule) so that later sends
stay queued in Redis; the acknowledged writes are recorded as at soak end, Redis is restarted as
the restart challenge restarts it (which also undoes the rule), and they are recorded again. Graded
on that evidence, `protect queue(fanout) at soak_end, after_restart` passes with `appendonly yes`
(Redis replays its append-only file: the queue drains into the inboxes it kept) and fails with
`appendonly no`, naming the sends that were queued at the restart and those delivered before it.
Holds the machine's live lock (tests/livelock.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from arenac.loadgen.acks import AckLog, read_acks
from arenac.model.gates import ProtectQueue
from arenac.runner.acked import record_acked_state
from arenac.runner.harness_io import HarnessIO
from arenac.substrate.spine.driver import DRIVER
from arenac.substrate.spine.harness import send_burst
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from arenac.verify.acked import IN_FLIGHT_REAL_S
from livelock import live_lock
from substrate.spine_client import assert_gone, ports_of
from verify.recorded import RecordedRun

pytestmark = pytest.mark.live  # starts a stack

ACROSS = ProtectQueue(queues=("fanout",), at=("soak_end", "after_restart"))
SENDS = 20  # per burst


def _backlog(io: HarnessIO) -> int | None:
    try:
        return int(io.admin("fanout", "GET", "/admin/backlog")["backlog"])
    except (OSError, KeyError, ValueError):  # 503 while Redis is away: ask again
        return None


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.parametrize(("appendonly", "kept"), [("yes", True), ("no", False)])
def test_the_queue_protected_after_the_restart_holds_only_when_redis_persists(tmp_path: Path, appendonly, kept):
    with live_lock():
        stack = SpineStack(tmp_path / "stack", SpineSpec().with_sets(["TIME_SCALE=0.1",
                                                                      f"redis.appendonly={appendonly}"]))
        stack.start()
        endpoints, pids = stack.endpoints, list(stack.pids().values())
        io = HarnessIO(endpoints, DRIVER)
        try:
            zero = time.monotonic()
            acks = AckLog(tmp_path / "acks.jsonl", lambda: time.monotonic() - zero, source="load", autoflush=True)
            after_id = int(io.query("SELECT coalesce(max(id), 0) FROM messages")[0][0])
            delivered = asyncio.run(send_burst(endpoints, "general", SENDS, 4, acks))
            _wait_for(lambda: _backlog(io) == 0)  # fanned out into the inboxes
            io.redis("ACL", "SETUSER", "fanout", "-@list")  # the worker can no longer take events
            queued = asyncio.run(send_burst(endpoints, "eng", SENDS, 4, acks))
            assert delivered["accepted"] == queued["accepted"] == SENDS
            _wait_for(lambda: (_backlog(io) or 0) >= SENDS)
            time.sleep(IN_FLIGHT_REAL_S + 0.5)  # every send old enough to be judged
            soak_end = record_acked_state(io, time.monotonic() - zero, {"messages": after_id})
            stack.restart_service("redis")  # what the restart challenge does; it undoes the ACL rule
            _wait_for(lambda: _backlog(io) == 0)  # with the AOF, the replayed queue drains
            time.sleep(1.0)
            after_restart = record_acked_state(io, time.monotonic() - zero, {"messages": after_id})
        finally:
            io.close()
            stack.stop()
            assert_gone(pids, ports_of(endpoints))

    run = RecordedRun(tmp_path / "graded", time_scale=1.0)
    run.acks = read_acks(tmp_path / "acks.jsonl")
    run.acked_record = soak_end.model_dump(mode="json")
    run.acked_after_restart = after_restart.model_dump(mode="json")
    run.outcome, run.safety = [], [ACROSS]
    (check,) = run.grade().gates.safety.checks
    (tmp_path / "check.json").write_text(check.model_dump_json(indent=1))  # to read when it fails
    at_soak_end, at_restart = check.observed["queue(fanout) soak_end"], check.observed["queue(fanout) after_restart"]
    sent_to = {channel: {a["id"] for a in run.acks if a["channel"] == channel} for channel in ("general", "eng")}
    assert at_soak_end["dropped"] == [] and at_soak_end["queued"] == SENDS, check.detail  # queued at the restart
    assert at_restart["judged"] == 2 * SENDS, check.detail
    if kept:
        assert check.passed, check.detail
        assert at_restart["delivered"] == 2 * SENDS, check.detail  # the queue outlived the restart and drained
    else:
        assert not check.passed, check.detail
        assert set(at_restart["lost_queued"]) == sent_to["eng"]  # queued in Redis at the restart: lost
        assert set(at_restart["lost_delivered"]) == sent_to["general"]  # and the inboxes with them
        assert "were queued at soak end" in check.detail
