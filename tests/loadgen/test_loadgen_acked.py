"""Live: a spine stack under the load generator, its acknowledged writes recorded, then graded as an
episode would be at soak end. Untouched, `protect table(messages)` and `protect queue(fanout)` pass;
deleting acknowledged messages written after the baseline while keeping the sequences dense fails
`protect` (the old baseline checksum alone passed it); flushing Redis fails the queue check. With
deletes in the mix, the generator's deletions of its own messages pass `protect` and the dense
sequence, and a message deleted by anyone else still fails it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from arenac.loadgen import run_load
from arenac.loadgen.acks import read_acks
from arenac.model.gates import Invariant, Protect, ProtectQueue
from arenac.runner.acked import record_acked_state
from arenac.runner.harness_io import HarnessIO
from arenac.runner.snapshot import _sequence_state, _table_state
from arenac.substrate.spine.driver import DRIVER
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from arenac.verify.acked import IN_FLIGHT_REAL_S
from loadgen.stub import profile
from substrate.spine_client import assert_gone, ports_of
from verify.recorded import RecordedRun, target

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

SCALE = 0.1
# mostly sends: a warm-up, then one short cycle
SENDS = profile([("peak", 20, 40), ("trough", 10, 10)], {"send": 4, "read": 1}, warmup=(10, 20))
GATES = [Protect(targets=(target("table", "messages"),)), ProtectQueue(queues=("fanout",)),
         Invariant(sequence="messages.seq", properties=("dense", "unique"))]


@pytest.fixture
def stack(tmp_path: Path):
    stack = SpineStack(tmp_path / "stack", SpineSpec().with_sets([f"TIME_SCALE={SCALE}"]))
    stack.start()
    endpoints, pids = stack.endpoints, list(stack.pids().values())
    io = HarnessIO(endpoints, DRIVER)
    try:
        yield stack, io
    finally:
        io.close()
        stack.stop()
        assert_gone(pids, ports_of(endpoints))


def state(io: HarnessIO, upto: int | None) -> dict:
    return {"tables": {"messages": _table_state(io, "messages", upto).model_dump(mode="json")},
            "sequences": {"messages.seq": _sequence_state(io, "messages.seq").model_dump(mode="json")}}


def run_with_baseline(spine: SpineStack, io: HarnessIO, tmp_path: Path, load, duration_s: float):
    """Drive LOAD, take the baseline (its largest id and state) when the warm-up ends, wait for the
    end; (acks, baseline, after_id, now)."""
    ready, acks_file = tmp_path / "ready.json", tmp_path / "acks.jsonl"
    thread = threading.Thread(target=run_load, args=(load, spine.endpoints.gateway, SCALE, duration_s,
                                                     tmp_path / "ledger.json"),
                              kwargs={"ready_file": ready, "acks_out": acks_file, "flush_s": 0.25})
    thread.start()
    try:
        while not ready.exists():
            time.sleep(0.05)
        zero = json.loads(ready.read_text())["clock_zero_unix"]

        def now() -> float:
            return (time.time() - zero) / SCALE

        time.sleep(1.0)  # the warm-up's writes, then the baseline
        after_id = int(io.query("SELECT coalesce(max(id), 0) FROM messages")[0][0])
        baseline = state(io, after_id)
    finally:
        thread.join(timeout=30)
    return read_acks(acks_file), baseline, after_id, now


def settle(io: HarnessIO) -> None:
    """Let fan-out catch up and the last sends' in-flight margin pass, as a soak would (a cold
    start on a busy machine trails)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if not io.admin("fanout", "GET", "/admin/backlog").get("backlog"):
                break
        except OSError:  # 503 while it measures: ask again
            pass
        time.sleep(0.2)
    time.sleep(IN_FLIGHT_REAL_S + 0.5)


def grade(tmp_path: Path, name: str, io: HarnessIO, acks: list[dict], baseline: dict, after_id: int, now):
    """An evidence directory of the run so far, graded: the checks by kind."""
    run = RecordedRun(tmp_path / name, time_scale=SCALE)
    run.snapshots["baseline"].update(baseline)
    run.snapshots["soak_end"].update(state(io, after_id))
    run.acks = acks
    run.acked_record = record_acked_state(io, now(), {"messages": after_id}).model_dump(mode="json")
    run.outcome, run.safety = [], list(GATES)
    verdict = run.grade()
    return {check.kind: check for check in verdict.gates.safety.checks}


def test_lost_acknowledged_writes_fail_protect_and_the_queue_check(stack, tmp_path: Path) -> None:
    spine, io = stack
    acks, baseline, after_id, now = run_with_baseline(spine, io, tmp_path, SENDS, 40.0)
    newer = [a for a in acks if a["id"] > after_id]
    assert len(newer) > 50, (len(acks), after_id)  # traffic after the baseline, each write answered with its id
    assert {a["source"] for a in acks} == {"load"}

    # the last sends are in flight for the queue check's first seconds (they are not judged): wait
    # them out, and let fan-out catch up as a soak would (a cold start on a busy machine trails)
    settle(io)
    checks = grade(tmp_path, "untouched", io, acks, baseline, after_id, now)
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values() if not c.passed]

    # delete a channel's three newest acknowledged messages and wind its sequencer back: dense, unique
    channel = max({a["channel"] for a in newer}, key=lambda c: sum(a["channel"] == c for a in newer))
    gone = [int(i) for (i,) in io.query(
        f"SELECT m.id FROM messages m JOIN channels c ON c.id = m.channel_id WHERE c.name = '{channel}' "
        f"AND m.id > {after_id} ORDER BY m.seq DESC LIMIT 3")]
    io.sql("postgres", f"DELETE FROM messages WHERE id IN ({', '.join(map(str, gone))}); "
           "UPDATE channels c SET last_seq = (SELECT max(seq) FROM messages WHERE channel_id = c.id)")
    checks = grade(tmp_path, "deleted", io, acks, baseline, after_id, now)
    assert checks["invariant"].passed, checks["invariant"].detail  # the sequences stay dense and unique
    protect = checks["protect"]
    assert not protect.passed
    assert "checksum unchanged" in protect.detail  # what the old check saw: nothing
    assert protect.observed["table(messages)"]["acknowledged"]["missing"] == sorted(gone)

    io.redis("FLUSHALL")
    checks = grade(tmp_path, "flushed", io, acks, baseline, after_id, now)
    queue = checks["protect_queue"]
    assert not queue.passed, queue.detail
    assert len(queue.observed["queue(fanout)"]["dropped"]) > 50


# sends and deletes: the generator deletes its own messages from one real second after the warm-up
DELETES = profile([("peak", 20, 40), ("trough", 10, 10)], {"send": 4, "read": 1, "delete": 1}, warmup=(10, 20))


def test_the_clients_own_deletes_pass_and_a_deletion_by_anyone_else_fails(stack, tmp_path: Path) -> None:
    spine, io = stack
    acks, baseline, after_id, now = run_with_baseline(spine, io, tmp_path, DELETES, 60.0)
    deleted = [a for a in acks if a.get("op") == "delete"]
    answered = [a for a in deleted if a["answered"]]
    assert len(answered) >= 8, (len(deleted), len(acks))  # every one answered on a healthy stack
    assert all(a["id"] > after_id for a in deleted)  # never one the baseline checksum covers
    sent = {a["id"]: a for a in acks if "op" not in a}
    assert all(sent[a["id"]]["author"] == a["author"] and sent[a["id"]]["seq"] == a["seq"] for a in deleted)
    ids = ", ".join(str(a["id"]) for a in deleted)
    assert not io.query(f"SELECT id FROM messages WHERE id IN ({ids})")  # each delete answered 200 took its row

    settle(io)
    checks = grade(tmp_path, "own-deletes", io, acks, baseline, after_id, now)
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values() if not c.passed]
    assert checks["protect"].observed["table(messages)"]["acknowledged"]["deleted"] == sorted(a["id"] for a in deleted)
    holes = checks["invariant"].observed["gaps"]
    assert 0 < holes <= len(deleted), checks["invariant"].detail  # the client's holes, excused

    # someone else deletes three acknowledged messages the client kept (as the vandalise adversary does)
    others = [int(i) for (i,) in io.query(
        f"SELECT id FROM messages WHERE id > {after_id} ORDER BY id DESC LIMIT 3")]
    io.sql("postgres", f"DELETE FROM messages WHERE id IN ({', '.join(map(str, others))})")
    checks = grade(tmp_path, "vandalised", io, acks, baseline, after_id, now)
    protect = checks["protect"]
    assert not protect.passed
    assert protect.observed["table(messages)"]["acknowledged"]["missing"] == sorted(others)
