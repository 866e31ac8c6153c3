"""What the load generator, a process of its own, hands the runner besides the evidence: its ready
file (`--ready-file`: it has started, and where its clock's zero lies) and its live view
(`--live-file`, RUN_DIR/live.json: the last seconds' completions, for progress lines and live
checks). Written by arenac/loadgen (generator.py, ledger.py), read by arenac/runner
(runner/local_load.start_loadgen) and arenac/loadgen/ledger.LiveView.read.
"""

from __future__ import annotations

from arenac.model.record import Record


class LoadgenReady(Record):
    """The ready file: written once, when the generator's plan is laid out."""

    pid: int
    clock_zero_unix: float  # Unix time of plan t = 0
    time_scale: float
    warmup_end_s: float  # plan seconds: when the first cycle starts (the generator may anchor it)
    cycle_s: float


class LiveBucket(Record):
    """The requests that completed in one whole plan second."""

    t: int
    count: int
    errors: int
    hist: str  # base64 HdrHistogram encoding, latencies in microseconds


class LiveDocument(Record):
    """live.json: completion buckets of the last seconds as of plan time `t`."""

    t: float
    in_flight: int = 0  # requests started and not yet answered
    time_scale: float
    buckets: tuple[LiveBucket, ...]
