"""The local backend's load generator: `python -m arenac.loadgen` as a process of its own, in a
session of its own, started with the plan's load profile and stopped by SIGTERM (continued first: a
stopped generator takes the TERM only once continued).

Contract: `start_loadgen` returns once the generator's ready file names its clock's zero (within
60 s, else RuntimeError with the end of its log); the ledger, the acknowledged writes
(`acks.jsonl` beside it) and the live file are the generator's to write.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from arenac.model.loadgen import LoadgenReady
from arenac.runner.clock import monotonic_of_unix
from arenac.runner.load_command import loadgen_args, write_profile


@dataclass
class LoadgenProcess:
    process: subprocess.Popen
    zero: float  # time.monotonic() of the generator's clock zero
    warmup_end_s: float  # plan seconds: when the first cycle starts (the generator may anchor it)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.send_signal(signal.SIGCONT)  # a stopped generator takes the TERM only once continued
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_loadgen(plan, gateway: str, time_scale: float, ledger: Path, scratch: Path,
                  live_file: Path | None = None) -> LoadgenProcess:
    profile = scratch / "profile.json"
    write_profile(plan, profile)
    ready = scratch / "loadgen.ready"
    log = open(scratch / "loadgen.log", "ab")  # noqa: SIM115 - closed once the generator holds its own copy
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "arenac.loadgen",
             *loadgen_args(plan, gateway, time_scale, ledger, profile, ready, live_file)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        log.close()
    deadline = time.monotonic() + 60
    while not ready.exists() or not ready.read_text().strip():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the load generator did not start: {(scratch / 'loadgen.log').read_text()[-500:]}")
        time.sleep(0.02)
    info = LoadgenReady.model_validate_json(ready.read_bytes())
    # the ready file says when (Unix time) its clock started; map it onto our monotonic clock
    zero = monotonic_of_unix(info.clock_zero_unix)
    return LoadgenProcess(process, zero, info.warmup_end_s)
