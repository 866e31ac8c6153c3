"""`arenac harness ...` against a real spine stack, reached through its endpoints file (the override
a cluster replaces with Service names and mounted Secrets): the load generator writes the ledger and
the acknowledged writes a grader reads; a runtime fault of a compiled bundle is injected and shows
in the admin API; snapshots and the record of acknowledged writes are the episode's own evidence
models, and see what the injection changed; a chart layer's workload trigger appends to
harness_acks.jsonl; a fault that leaks a lock holds its session until SIGTERM. Kept short: one stack,
a few seconds of load at time scale 0.1, under the machine's live lock ($ARENAC_LIVE_LOCK)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from arenac.cli import main
from arenac.loadgen.acks import read_acks
from arenac.model.evidence import AckedSoakEnd, Backlog, JobRuns, Ledger, MessagesAtSoakEnd, Snapshot
from arenac.model.loadgen import LoadgenReady
from arenac.substrate.interface import Endpoints
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from arenac.verify.safety import diff
from helpers import ROOT
from helpers.harness_plans import chart_layer_burst, holds_a_session, runtime_at_start
from livelock import live_lock
from substrate.spine_client import http

pytestmark = pytest.mark.live  # starts a stack and timed load


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoints, Path]]:
    """A healthy stack and its endpoints file, for the whole module."""
    directory = tmp_path_factory.mktemp("harness-stack")
    with live_lock():
        spine = SpineStack(directory / "stack", SpineSpec())
        try:
            endpoints = spine.start()
            path = directory / "endpoints.json"
            path.write_text(endpoints.to_json())
            yield endpoints, path
        finally:
            spine.stop()


def harness(*args: str):
    result = CliRunner().invoke(main, ["harness", *args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def admin(endpoints: Endpoints, service: str, path: str, body: dict | None = None):
    reply = http("POST" if body is not None else "GET", endpoints.services[service] + path, body,
                 headers=endpoints.admin_headers())
    assert reply.status == 200, reply
    return reply.body


def test_load_inject_snapshots_samples_and_acked_writes_on_one_run_dir(stack, plan_where, tmp_path):
    endpoints, endpoints_file = stack
    plan = str(plan_where(runtime_at_start))
    target = ["--plan", plan, "--endpoints", str(endpoints_file), "--run-dir", str(tmp_path)]
    evidence = tmp_path / "evidence"

    baseline = harness("snapshot", *target, "--label", "baseline")
    assert baseline.exit_code == 0, baseline.output
    assert records(baseline)[0]["clock"] == "command"  # no load yet: the command's own clock
    ids = json.loads((tmp_path / "baseline_ids.json").read_text())
    assert set(ids) == {"messages"}

    load = harness("loadgen", "--plan", plan, "--run-dir", str(tmp_path), "--target", endpoints.gateway,
                   "--time-scale", "0.1", "--duration-s", "30")
    assert load.exit_code == 0, load.output
    ledger = Ledger.model_validate_json((evidence / "ledger.json").read_bytes())
    assert ledger.time_scale == 0.1 and sum(s.count for s in ledger.seconds) > 20
    assert sum(s.errors for s in ledger.seconds) == 0
    ready = LoadgenReady.model_validate_json((tmp_path / "loadgen.ready").read_bytes())
    assert ready.time_scale == 0.1 and (tmp_path / "live.json").is_file()
    acks = read_acks(evidence / "acks.jsonl")
    assert acks and {a["source"] for a in acks} == {"load"}

    # the runtime fault of the compiled bundle, injected through the admin API
    events = admin(endpoints, "channel", "/admin/event")["events"]
    assert "read_consistency_strict" not in [name for name, on in events.items() if on]
    injected = harness("inject", *target, "--onset", "at_start")
    assert injected.exit_code == 0, injected.output
    [line] = records(injected)
    assert line["what"] == "inject strict" and line["ok"] is True and line["clock"] == "loadgen"
    assert admin(endpoints, "channel", "/admin/event")["events"]["read_consistency_strict"] is True
    assert admin(endpoints, "channel", "/admin/config")["config"]["READ_CONSISTENCY_HOLD_MS"] in ("800", 800)
    retriggered = harness("trigger", *target, "--fault", "strict")
    assert retriggered.exit_code == 0 and records(retriggered)[0]["what"] == "retrigger strict"

    declared = harness("snapshot", *target, "--label", "declaration")
    assert declared.exit_code == 0, declared.output
    before = Snapshot.model_validate_json((evidence / "snapshots" / "baseline.json").read_bytes())
    after = Snapshot.model_validate_json((evidence / "snapshots" / "declaration.json").read_bytes())
    changed = {str(target_): (old, new) for target_, old, new in diff(before, after)}
    assert changed["event(channel.read_consistency_strict)"][1] == "on"
    assert "config(channel.READ_CONSISTENCY_HOLD_MS)" in changed
    assert after.tables["messages"] == before.tables["messages"]  # counted up to the baseline's ids

    sampled = harness("sample", *target, "--wait-s", "5", "--duration-s", "20")
    assert sampled.exit_code == 0, sampled.output
    backlog = Backlog.model_validate_json((evidence / "backlog.json").read_bytes())
    runs = JobRuns.model_validate_json((evidence / "runs.json").read_bytes())
    assert backlog.queues["fanout"] and "maintenance" in runs.jobs

    recorded = harness("acked", *target, "--label", "soak_end")
    assert recorded.exit_code == 0, recorded.output
    acked = AckedSoakEnd.model_validate_json((evidence / "acked_soak_end.json").read_bytes())
    assert isinstance(acked.messages, MessagesAtSoakEnd) and acked.messages.after_id == ids["messages"]
    # every write the load was told succeeded is there, digested as its writer digested it
    assert {str(a["id"]): a["digest"] for a in acks}.items() <= acked.messages.rows.items()

    admin(endpoints, "channel", "/admin/event", {"name": "read_consistency_strict", "on": False})
    admin(endpoints, "channel", "/admin/reload", {})


def test_a_chart_layers_workload_trigger_appends_to_the_harness_acks(stack, plan_where, tmp_path):
    _, endpoints_file = stack
    command = [sys.executable, "-m", "arenac.cli", "harness", "inject", "--plan", str(plan_where(chart_layer_burst)),
               "--endpoints", str(endpoints_file), "--run-dir", str(tmp_path), "--onset", "at_start"]
    counts = []
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        [line] = [json.loads(text) for text in done.stdout.splitlines()]
        assert line["what"] == "inject seq" and line["ok"] is True
        counts.append(line["bursts"][0]["accepted"])
    acks = read_acks(tmp_path / "evidence" / "harness_acks.jsonl")
    assert counts[0] > 0 and len(acks) == sum(counts)  # the second command appended
    assert {a["source"] for a in acks} == {"harness"}


def test_a_leaked_lock_is_held_until_sigterm(stack, plan_where, tmp_path):
    endpoints, endpoints_file = stack
    plan = plan_where(holds_a_session)
    faults = json.loads(plan.read_text())["faults"]
    fault = next(f["name"] for f in faults if any(a.get("hold_open") for a in f["inject"]))
    process = subprocess.Popen([sys.executable, "-m", "arenac.cli", "harness", "inject", "--plan", str(plan),
                                "--endpoints", str(endpoints_file), "--run-dir", str(tmp_path), "--fault", fault],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    from arenac.runner.harness_io import HarnessIO
    from arenac.substrate.spine.driver import DRIVER

    io = HarnessIO(endpoints, DRIVER)
    held = "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND usename = 'spine_app'"
    try:
        assert process.stderr is not None
        assert "holding 1 database session(s) open" in process.stderr.readline()
        assert io.query(held)[0][0] >= 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while io.query(held)[0][0] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert io.query(held)[0][0] == 0
    finally:
        process.kill()
        process.wait()
        io.close()
