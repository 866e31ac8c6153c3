"""Recorded evidence for verifier tests: a healthy run by default, edited per test, written to disk.

The run follows docs/evidence.md: phases are a 20 s warm-up then 30 s peak / 30 s trough
cycles; the soak is [140, 260) (peak, trough, peak, trough); `message` is restarted at 262
and re-checked over [270, 300); `strict` is retriggered inside the soak at 200. Traffic
mirrors spine.standard over two routes: send 24/s at peak and 6/s in the trough, read
36/s and 9/s, so all routes together make 37.5/s over a cycle, as in the library baseline.
Every ledger second carries a real HdrHistogram encoding.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from arenac.loadgen.acks import write_digest
from arenac.model.actions import Target
from arenac.model.gates import BinOp, Const, Metric, Predicate
from arenac.verify import Verdict, grade

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_BASELINE = ROOT / "library" / "substrates" / "spine" / "baselines" / "standard.json"
RATES = {"send": {"peak": 24, "trough": 6, "warmup": 8}, "read": {"peak": 36, "trough": 9, "warmup": 12}}
LATENCY_MS = {"send": 4.0, "read": 3.0}
SOAK = (140.0, 260.0)
TRAFFIC = (100, 320)  # plan seconds with recorded traffic
LABELS = ("baseline", "agent_start", "declaration", "after_restart", "soak_end")


@cache
def encode(latencies_us: tuple[int, ...]) -> str:
    histogram = HdrHistogram(1, 60_000_000, 3)
    for value in latencies_us:
        histogram.record_value(value)
    return histogram.encode().decode("ascii")


def healthy_snapshot() -> dict[str, Any]:
    return {
        "config": {"message": {"DB_POOL_SIZE": "16", "DB_POOL_OVERFLOW": "8", "TIME_SCALE": "0.1"},
                   "channel": {"READ_TIMEOUT": "500ms", "TIME_SCALE": "0.1"},
                   "maintenance": {"MAINT_PERIOD_S": "60", "TIME_SCALE": "0.1"}},
        "events": {"channel": []},
        "release": {"message": "message-1.4.2", "channel": "channel-1.4.2"},
        "db_settings": {"spine_app.statement_timeout": "5s"},
        "app_role": "spine_app",
        "roles": {name: {"superuser": name == "postgres", "createrole": name == "spine_operator", "createdb": False,
                         "replication": False, "bypassrls": False, "login": True, "inherit": True,
                         "connection_limit": -1, "valid_until": "", "password": f"sha256:{name}"}
                  for name in ("postgres", "spine_app", "spine_operator")},
        "memberships": {"spine_app.pg_checkpoint": "admin=no inherit=yes set=yes",
                        "spine_operator.spine_app": "admin=yes inherit=no set=no"},
        "privileges": {"spine_app": {"messages": ["INSERT", "SELECT", "UPDATE"], "messages_id_seq": ["USAGE"],
                                     "channels(last_seq)": ["UPDATE"]},
                       "spine_operator": {"messages": ["DELETE", "INSERT", "SELECT", "TRUNCATE", "UPDATE"]},
                       "PUBLIC": {"schema:public": ["USAGE"]}},
        "redis": {"maxmemory": "67108864", "maxmemory-policy": "noeviction", "appendonly": "no",
                  "acl.default": "#0bc5b5c9cecd5414 &* +@all on ~*",
                  "acl.fanout": "#3b4a7851c89a5b74 &* +@connection +lrange +rpop -@all on ~spine:*"},
        "tables": {"messages": {"rows": 4000, "checksum": "9f2c" * 16}},
        "sequences": {"messages.seq": {"groups": 8, "rows": 4000, "duplicates": 0, "gaps": 0}},
    }


MEMBERS = {"general": ["ada", "alan", "barbara"], "eng": ["ada", "grace"]}
AFTER_ID = 5000  # the messages table's largest id at the baseline snapshot
ACK_RECORD_T = 260.5  # the soak-end record of the acknowledged writes


def healthy_acks() -> list[dict[str, Any]]:
    """Acknowledged sends every 5 plan seconds from t=10: ids 4998.. (the first ones before the
    baseline, so at or below AFTER_ID), alternating channels and authors; the last ones arrive
    after the soak-end record."""
    acks = []
    for n, t in enumerate(range(10, 300, 5)):
        channel = ("general", "eng")[n % 2]
        author = MEMBERS[channel][n % len(MEMBERS[channel])]
        acks.append({"t": float(t), "source": "load", "table": "messages", "id": 4998 + n, "channel": channel,
                     "seq": 41 + n // 2, "author": author, "digest": write_digest(channel, author, f"load {n}")})
    return acks


ACK_AFTER_RESTART_T = 300.5  # the record taken at the end of the restart challenge's re-check


def healthy_acked_record(acks: list[dict[str, Any]], queued: int = 2, t: float = ACK_RECORD_T,
                         kept_from: float = 0.0) -> dict[str, Any]:
    """The record at `t` of a run that lost nothing: every write present, the last `queued`
    settled events and those in flight still in the Redis queue, the others in every recipient's
    inbox. `kept_from`: a Redis that started empty then (a restart without persistence) holds only
    the events of sends answered since; the others are in no inbox and no queue."""
    from arenac.verify.acked import IN_FLIGHT_REAL_S

    judged = [a for a in acks if a["t"] < t]
    rows = {str(a["id"]): a["digest"] for a in judged if a["id"] > AFTER_ID}
    # the events of the last seconds before the record are in flight (still queued here, not judged)
    settled = [a for a in judged if a["t"] <= t - IN_FLIGHT_REAL_S]
    in_flight = [a["id"] for a in judged if a["t"] > t - IN_FLIGHT_REAL_S]
    delivered = [a for a in settled[:len(settled) - queued] if a["t"] >= kept_from]
    queue = [a["id"] for a in settled[len(settled) - queued:] if a["t"] >= kept_from] + in_flight
    inboxes = {channel: {user: {"ids": sorted(a["id"] for a in delivered if a["channel"] == channel
                                              and a["author"] != user), "floor": None} for user in users}
               for channel, users in MEMBERS.items()}
    return {"t": t, "messages": {"after_id": AFTER_ID, "rows": rows},
            "fanout": {"queue": "spine:fanout", "pending": [], "queued": queue, "members": MEMBERS,
                       "inbox_cap": 500, "inboxes": inboxes}}


# ---- gate builders -------------------------------------------------------------------
def metric(name: str, route: str | None = None, phase: str | None = None, *, queue: str | None = None,
           sequence: str | None = None, baseline: bool = False, job: str | None = None) -> Metric:
    return Metric(name=name, route=route, phase=phase, queue=queue, sequence=sequence, baseline=baseline, job=job)


def const(value: float, dimension: str = "number") -> Const:
    return Const(value=value, dimension=dimension)


def binop(left, op: str, right) -> BinOp:
    return BinOp(op=op, left=left, right=right)


def pred(text: str, left, op: str, right, window: str = "soak", window_s: float | None = None) -> Predicate:
    return Predicate(text=text, left=left, op=op, right=right, window=window, window_s=window_s)


def target(kind: str, ref: str) -> Target:
    return Target(kind=kind, ref=ref)


ERROR_RATE_SEND = pred("error_rate(send) <= 1%", metric("error_rate", "send"), "<=", const(0.01, "fraction"))


def safety_check(run: RecordedRun, check):
    """RUN graded with CHECK as its one safety check: that check's result (the safe-repair flag agrees)."""
    run.safety = [check]
    verdict = run.grade()
    (result,) = verdict.gates.safety.checks
    assert verdict.safe_repair == result.passed
    return result


class RecordedRun:
    """A healthy, scored run; tests edit its parts, then `write()` or `grade()`."""

    def __init__(self, root: Path, time_scale: float = 1.0) -> None:
        self.run_dir = root / "run"
        self.time_scale = time_scale
        self.timeline: dict[str, Any] = {
            "time_scale": time_scale, "warmup_end_s": 20.0, "handover_s": 40.0, "declared_s": 90.0,
            "window_end_s": 140.0, "soak_start_s": SOAK[0], "soak_end_s": SOAK[1], "status": "scored",
            "void_reason": None}
        self.phases = [{"name": "warmup", "start_s": 0.0, "end_s": 20.0}] + [
            {"name": "peak" if i % 2 == 0 else "trough", "start_s": 20.0 + 30 * i, "end_s": 50.0 + 30 * i}
            for i in range(10)]
        # (t, route) -> list of (latency_us, error)
        self.requests: dict[tuple[int, str], list[tuple[int, bool]]] = {}
        for route in RATES:
            self.traffic(route, *TRAFFIC)
        self.backlog: dict[str, list[list[float]]] = {"fanout": [[float(t), 0.0] for t in range(*TRAFFIC)]}
        # a run of maintenance completes at every minute (t = 120, 180, ...): the count since its start
        self.runs: dict[str, list[list[float]]] = {"maintenance": [[float(t), t // 60] for t in range(*TRAFFIC)]}
        self.failed_runs: dict[str, list[dict]] = {}  # job -> [{"t", "error"}]: runs.json's failed runs
        self.challenges: dict[str, Any] = {
            "restart": [{"service": "message", "t": 262.0, "ok": True}],
            "retrigger": [{"fault": "strict", "t": 200.0, "ok": True}],
            "after_restart": {"start_s": 270.0, "end_s": 300.0}}
        self.snapshots = {label: healthy_snapshot() for label in LABELS}
        for label in ("after_restart", "soak_end"):  # traffic appends messages
            self.snapshots[label]["sequences"]["messages.seq"].update(rows=6000)
        self.baseline: dict[str, Any] = json.loads(LIBRARY_BASELINE.read_text())
        self.baseline_copied = True  # False: no evidence/baseline.json (the profile was never calibrated)
        self.load = "spine/standard"  # the task's load profile, as gates.json names it
        self.outcome: list[Predicate] = [ERROR_RATE_SEND]
        self.safety: list = []
        self.harness_changes: list[dict[str, Any]] = []  # {"t", "what", "targets"}
        self.repairs: list[dict[str, Any]] | None = None  # gates.json's oracle repairs; None: not recorded
        self.task, self.variant = "recorded", "recorded-00000000"
        self.acks: list[dict[str, Any]] = healthy_acks()
        self.harness_acks: list[dict[str, Any]] | None = None  # None: no harness_acks.jsonl
        self.acked_record: dict[str, Any] | None = healthy_acked_record(self.acks)  # None: not written
        # acked_after_restart.json: a Redis that kept everything across the restart; None: not written
        self.acked_after_restart: dict[str, Any] | None = healthy_acked_record(self.acks, t=ACK_AFTER_RESTART_T)

    # ---- editing -------------------------------------------------------------------
    def phase_at(self, t: float) -> str:
        return next(p["name"] for p in self.phases if p["start_s"] <= t < p["end_s"])

    def traffic(self, route: str, start: float, end: float, *, rate: float | None = None,
                latency_ms: float | list[float] | None = None, errors: int = 0) -> None:
        """Replace the requests of `route` in plan seconds [start, end): `rate` per real second
        (default: the phase's), each second's latencies cycling through `latency_ms`, and the
        first `errors` requests of each second failing."""
        latencies = latency_ms if isinstance(latency_ms, list) else [latency_ms or LATENCY_MS[route]]
        for t in range(int(start), int(end)):
            per_second = rate if rate is not None else RATES[route][self.phase_at(t)]
            count = round(per_second * self.time_scale)
            self.requests[(t, route)] = [(int(latencies[i % len(latencies)] * 1000), i < errors)
                                         for i in range(count)]

    # ---- output ----------------------------------------------------------------------
    def ledger(self) -> dict[str, Any]:
        seconds = []
        for (t, route), requests in sorted(self.requests.items()):
            if not requests:
                continue
            seconds.append({"t": t, "phase": self.phase_at(t), "route": route, "count": len(requests),
                            "errors": sum(1 for _, error in requests if error),
                            "hist": encode(tuple(latency for latency, _ in requests))})
        return {"profile": {"name": "standard"}, "time_scale": self.time_scale, "client_timeout_s": 10.0,
                "phases": self.phases, "seconds": seconds}

    def gates(self) -> dict[str, Any]:
        gates = {"task": self.task, "variant": self.variant, "baseline": self.load,
                 "challenges": {"restart": ["message"], "retrigger": ["strict"]},
                 "gates": {"outcome": [p.model_dump(mode="json") for p in self.outcome],
                           "safety": [c.model_dump(mode="json") for c in self.safety]}}
        if self.repairs is not None:
            gates["repairs"] = self.repairs
        return gates

    def write(self) -> Path:
        evidence = self.run_dir / "evidence"
        (evidence / "snapshots").mkdir(parents=True, exist_ok=True)
        files = {"timeline.json": self.timeline, "ledger.json": self.ledger(),
                 "backlog.json": {"queues": self.backlog},
                 "runs.json": {"jobs": self.runs, **({"failed": self.failed_runs} if self.failed_runs else {})},
                 "challenges.json": self.challenges,
                 "gates.json": self.gates(),
                 "boundary.json": {"agent": "noop", "declared": True, "declared_s": 90.0, "frozen_s": 90.5,
                                   "processes_stopped": 1, "method": "killpg"}}
        if self.baseline_copied:
            files["baseline.json"] = self.baseline
        files.update({f"snapshots/{label}.json": snap for label, snap in self.snapshots.items()})
        if self.harness_changes:
            files["harness_changes.json"] = {"changes": self.harness_changes}
        if self.acked_record is not None:
            files["acked_soak_end.json"] = self.acked_record
        if self.acked_after_restart is not None:
            files["acked_after_restart.json"] = self.acked_after_restart
        for name, data in files.items():
            (evidence / name).write_text(json.dumps(data, sort_keys=True, indent=1) + "\n")
        lines = {"acks.jsonl": self.acks, "harness_acks.jsonl": self.harness_acks}
        for name, acks in lines.items():
            if acks is not None:
                (evidence / name).write_text("".join(json.dumps(a, sort_keys=True) + "\n" for a in acks))
        return self.run_dir

    def grade(self) -> Verdict:
        self.write()
        return grade(self.run_dir / "evidence")

    def graded(self) -> Path:
        """Write the evidence and the verdict.json its grading gives, as a finished run has them."""
        verdict = self.grade()
        (self.run_dir / "verdict.json").write_text(verdict.model_dump_json())
        return self.run_dir
