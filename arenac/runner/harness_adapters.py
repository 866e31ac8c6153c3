"""Where the episode meets the harness parts: load generator, broker, verifier, baseline.

Each function is a thin seam so that the episode reads as the timeline it is. The verifier is
imported with this module (arenac.verify.grade brings the rest of it), before any episode starts:
grading then runs the code that was installed when the episode began, whatever happens to the
files on disk meanwhile.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from arenac.model.loadgen import LoadgenReady
from arenac.model.verdict import Verdict, Window
from arenac.runner.access import AgentAccess
from arenac.core.serialize import dump_json, write_atomic
from arenac.verify.evidence import Evidence, EvidenceError
from arenac.verify.grade import grade as grade_evidence
from arenac.verify.grade import parse_gates, write_results
from arenac.verify.metrics import Measurer
from arenac.verify.outcome import evaluate_predicate
from arenac.verify.verdict import unscored


# ---- load generator -----------------------------------------------------------------------------
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
    profile.write_text(dump_json(plan.load.model_dump(mode="json")), encoding="utf-8")
    ready = scratch / "loadgen.ready"
    log = open(scratch / "loadgen.log", "ab")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "arenac.loadgen", "--profile", str(profile), "--target", gateway,
             "--out", str(ledger), "--time-scale", f"{time_scale:g}", "--ready-file", str(ready),
             "--substrate", plan.substrate, "--flush-s", "0.25", "--acks-out", str(ledger.with_name("acks.jsonl")),
             # cycles anchored on the Unix epoch, as the substrate schedules its maintenance
             "--anchor-unix", "0"] + (["--live-file", str(live_file)] if live_file else []),
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
    zero = time.monotonic() - (time.time() - info.clock_zero_unix)
    return LoadgenProcess(process, zero, info.warmup_end_s)


# ---- broker ---------------------------------------------------------------------------------------
def start_broker(bundle, stack, scratch: Path, log, on_declare, sandboxed: bool = False):
    return AgentAccess.start(bundle, stack, scratch, log, on_declare, sandboxed=sandboxed)


# ---- verifier --------------------------------------------------------------------------------------
def copy_grading_inputs(bundle, evidence: Path) -> None:
    """The pinned gates and the substrate's baseline into the evidence (for re-grading later)."""
    # atomically: teardown rewrites them, and a crash then must not leave a part of either
    write_atomic(evidence / "gates.json", bundle.gates_bytes)
    baseline = resources.files("arenac.library").joinpath(f"substrates/{bundle.plan.substrate}/baseline.json")
    write_atomic(evidence / "baseline.json", baseline.read_bytes())


def grade(run_dir: Path, bundle) -> Verdict:
    """Grade with the gates pinned when the bundle was opened (never a file re-read now); the
    verdict records the pinned digests."""
    try:
        verdict = grade_evidence(run_dir / "evidence", gates=parse_gates(bundle.gates_bytes))
    except EvidenceError as error:  # it names the file: the pinned gates or a piece of evidence
        verdict = unscored(bundle.plan.task, bundle.plan.variant, "infra_error", f"unreadable evidence: {error}")
    verdict = verdict.model_copy(update={"pinned": bundle.digests()})
    write_results(run_dir, verdict)
    return verdict


@dataclass(frozen=True)
class LiveCheck:
    """A predicate evaluated live: whether it holds, and its detail or why it could not be
    evaluated. Returned to the caller, never kept here: episodes side by side (qualify --jobs)
    evaluate at once, and each void record must carry its own episode's reason."""

    holds: bool
    detail: str


def check_live(predicate, evidence: Path, now_s: float, window_s: float) -> LiveCheck:
    """Evaluate a predicate live over the last `window_s` plan seconds of the growing ledger."""
    if not (evidence / "ledger.json").exists():
        return LiveCheck(False, f"no ledger yet at {evidence / 'ledger.json'}")
    try:
        check = evaluate_predicate(predicate, Measurer(Evidence(evidence)),
                                   Window(label="live", start_s=now_s - window_s, end_s=now_s))
    except (EvidenceError, OSError, ValueError) as error:
        return LiveCheck(False, f"{type(error).__name__}: {error}")
    return LiveCheck(bool(check.passed), check.detail)


