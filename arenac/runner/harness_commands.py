"""The work of `arenac harness` (arenac/cli/harness.py): the episode's harness steps as commands of
their own, for pods of a cluster's harness namespace (docs/kubernetes.md, "The harness commands").

Each step is the local episode's own code, given other hands: the same action executor
(`HarnessIO.perform_all`), snapshot model (`take_snapshot`, `max_ids`), record of acknowledged
writes (`record_acked_state`), backlog and job-run samples (`BacklogSamples`, `JobRunSamples`) and
load generator arguments (`loadgen_args`). What differs is where the hands reach, the one seam:

- `harness_endpoints(plan, namespace, credentials, endpoints_file)`: on a cluster, the substrate's
  driver names its Services in the target namespace and reads its Secrets' keys, mounted as files
  under `credentials` (`SubstrateDriver.cluster_endpoints`); with `endpoints_file` (a running
  stack's endpoints JSON, as `arenac substrate up --ready-file` writes it) the hands reach that
  stack instead. The local backend never comes here: its hands are still the ones its stack's
  `start()` returns.
- `RunDir`: where a command writes, laid out as the local run directory is (`arenac grade` grades
  it): evidence/ (ledger.json, acks.jsonl, harness_acks.jsonl, snapshots/, acked_*.json,
  backlog.json, runs.json), the load generator's ready file and live view, and the baseline's
  maximum ids, which later snapshots and the acknowledged writes' record count from.
- `plan_clock(run)`: plan time is the load generator's clock (its ready file in the run
  directory), as in the episode; before any load runs, plan seconds from the command's start.

Errors: `HarnessInputError` for what the caller got wrong (a plan that is not one, a fault the plan
lacks, missing credentials, a run directory that cannot be written): nothing was attempted. A
substrate that refuses or cannot be reached is an `ActionOutcome` with `ok=False` (actions), or an
exception of the reading library (snapshots, records), which the command reports.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arenac.core.serialize import write_atomic
from arenac.loadgen.acks import AckLog
from arenac.model.evidence import PartUnreadable, Snapshot
from arenac.model.loadgen import LoadgenReady
from arenac.model.plan import Plan, PlannedFault
from arenac.runner.acked import record_acked_state
from arenac.runner.backlog import BacklogSamples, JobRunSamples
from arenac.runner.clock import EpisodeClock, monotonic_of_unix
from arenac.runner.harness_io import HarnessIO
from arenac.runner.load_command import loadgen_args, write_profile
from arenac.runner.onsets import fired_on
from arenac.runner.records import write_model
from arenac.runner.snapshot import max_ids, take_snapshot
from arenac.substrate.interface import Endpoints, EndpointsError, problems_of
from arenac.substrate.registry import UnknownSubstrate, driver_for


class HarnessInputError(Exception):
    """What the caller of a harness command got wrong; nothing was attempted."""


# ---- inputs -------------------------------------------------------------------------------------
def load_plan(path: Path) -> Plan:
    try:
        text = path.read_bytes()
    except OSError as error:
        raise HarnessInputError(f"--plan {path}: cannot read it: {error.strerror or error}") from None
    try:
        plan = Plan.model_validate_json(text)
    except ValidationError as error:
        problems = problems_of(error)
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise HarnessInputError(f"--plan {path}: not a plan.json: {'; '.join(problems[:3])}{more}") from None
    try:
        driver_for(plan.substrate)
    except UnknownSubstrate as error:
        raise HarnessInputError(f"--plan {path}: {error}") from None
    return plan


def read_credentials(directory: Path) -> dict[str, str]:
    """Key -> value of every file in `directory`: one or more Secrets mounted there (a projected
    volume), one file per key. Kubernetes' own entries (`..data`, `..2024_...`) are skipped."""
    try:
        entries = sorted(directory.iterdir())
    except OSError as error:
        raise HarnessInputError(f"--credentials {directory}: cannot read it: {error.strerror or error} "
                                "(mount the substrate's Secrets there, or give --endpoints)") from None
    found = {}
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_file():
            continue
        try:
            found[entry.name] = entry.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise HarnessInputError(f"--credentials {directory}: cannot read {entry.name}: {error}") from None
    return found


def harness_endpoints(plan: Plan, namespace: str | None, credentials: Path, endpoints_file: Path | None) -> Endpoints:
    """Where the harness's hands reach: the stack whose endpoints JSON is `endpoints_file`, else the
    plan's substrate installed in `namespace`, with the credentials mounted under `credentials`."""
    if endpoints_file is not None:
        try:
            return Endpoints.from_json(endpoints_file.read_bytes())
        except OSError as error:
            raise HarnessInputError(f"--endpoints {endpoints_file}: cannot read it: "
                                    f"{error.strerror or error}") from None
        except EndpointsError as error:
            raise HarnessInputError(f"--endpoints {endpoints_file}: {error}") from None
    if not namespace:
        raise HarnessInputError("give --target-namespace (the application's namespace) or --endpoints FILE")
    try:
        return driver_for(plan.substrate).cluster_endpoints(namespace, read_credentials(credentials))
    except EndpointsError as error:
        raise HarnessInputError(f"--credentials {credentials}: {error}") from None


def open_hands(plan: Plan, endpoints: Endpoints) -> HarnessIO:
    """The harness's hands on the substrate (close them when done)."""
    return HarnessIO(endpoints, driver_for(plan.substrate))


def fault_named(plan: Plan, name: str) -> PlannedFault:
    for fault in plan.faults:
        if fault.name == name:
            return fault
    known = ", ".join(f.name for f in plan.faults) or "none"
    raise HarnessInputError(f"--fault {name}: the plan {plan.variant} has no such fault (its faults: {known})")


def injections(plan: Plan, onset: str | None, names: Sequence[str]) -> list[PlannedFault]:
    """The faults whose injection the episode fires on an onset of kind `onset` (onsets.fired_on:
    a chart layer's workload triggers fire at the handover, as `at_start`), and among them those
    named (every one named must exist), in the plan's order; at least one filter is needed."""
    if onset is None and not names:
        raise HarnessInputError("say which faults to inject: --onset KIND, --fault NAME, or both")
    wanted = {fault_named(plan, name).name for name in names}
    return [fault for fault in plan.faults
            if fault.inject and (onset is None or fired_on(fault) == onset) and (not wanted or fault.name in wanted)]


# ---- the run directory and its clock ---------------------------------------------------------------
@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def evidence(self) -> Path:
        return self.root / "evidence"

    @property
    def ready(self) -> Path:
        """The load generator's ready file: its clock's zero (plan time 0)."""
        return self.root / "loadgen.ready"

    @property
    def live(self) -> Path:
        return self.root / "live.json"

    @property
    def baseline_ids(self) -> Path:
        """The protected tables' maximum ids at the baseline snapshot."""
        return self.root / "baseline_ids.json"

    def writable_evidence(self) -> Path:
        try:
            self.evidence.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise HarnessInputError(f"--run-dir {self.root}: cannot write there: {error.strerror or error}") from None
        return self.evidence

    def read_baseline_ids(self) -> dict[str, int]:
        try:
            data = json.loads(self.baseline_ids.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HarnessInputError(f"no {self.baseline_ids}: take the baseline snapshot first "
                                    "(arenac harness snapshot --label baseline)") from None
        except (OSError, ValueError) as error:
            raise HarnessInputError(f"{self.baseline_ids}: unreadable: {error}") from None
        if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
            raise HarnessInputError(f"{self.baseline_ids}: not a table -> maximum id object")
        return {str(table): value for table, value in data.items()}


def loadgen_ready(run: RunDir) -> LoadgenReady | None:
    try:
        return LoadgenReady.model_validate_json(run.ready.read_bytes())
    except (OSError, ValueError):  # not yet written, or being written
        return None


def plan_clock(run: RunDir) -> tuple[EpisodeClock, str]:
    """The episode's clock and where it came from: the load generator's ("loadgen"), or, before
    any load runs, plan seconds (time scale 1) from this command's start ("command")."""
    ready = loadgen_ready(run)
    if ready is None:
        return EpisodeClock(time_scale=1.0), "command"
    return EpisodeClock(time_scale=ready.time_scale, zero=monotonic_of_unix(ready.clock_zero_unix)), "loadgen"


def wait_for_clock(run: RunDir, wait_s: float, stop: threading.Event) -> EpisodeClock | None:
    """The load generator's clock, once its ready file is there (None: not within `wait_s` real
    seconds, or `stop` was set first)."""
    deadline = time.monotonic() + wait_s
    while True:
        clock, source = plan_clock(run)
        if source == "loadgen":
            return clock
        if time.monotonic() >= deadline or stop.wait(0.2):
            return None


# ---- actions: injections, retriggers, recurrences ----------------------------------------------
@dataclass(frozen=True)
class ActionOutcome:
    """One fault's actions carried out (or not): the episode's `harness_action` event, as data."""

    what: str
    ok: bool
    t: float
    bursts: list[Any] = field(default_factory=list)
    error: str = ""

    def record(self, clock_source: str) -> dict[str, Any]:
        line: dict[str, Any] = {"what": self.what, "ok": self.ok, "t": round(self.t, 3), "clock": clock_source}
        if self.bursts:
            line["bursts"] = self.bursts
        if self.error:
            line["error"] = self.error
        return line


def perform(io: HarnessIO, actions: Iterable[Any], what: str, clock: EpisodeClock) -> ActionOutcome:
    """The actions in order with the harness's hands, as the episode performs them; a failure is
    the outcome's, never raised (the episode records it and goes on)."""
    t = clock.now()
    try:
        return ActionOutcome(what, True, t, bursts=list(io.perform_all(actions)))
    except Exception as error:
        return ActionOutcome(what, False, t, error=f"{type(error).__name__}: {error}")


def record_bursts(io: HarnessIO, actions: Sequence[Any], run: RunDir, clock: EpisodeClock) -> None:
    """Accepted writes of send bursts go to the run's harness_acks.jsonl (appended: several commands
    of one episode write it), as the episode records them; nothing is opened without a burst."""
    if io.acks is None and any(action.kind == "send_burst" for action in actions):
        io.acks = AckLog(run.writable_evidence() / "harness_acks.jsonl", clock.now, source="harness",
                         autoflush=True, keep=True)


# ---- snapshots and records ---------------------------------------------------------------------
def snapshot(io: HarnessIO, plan: Plan, run: RunDir, label: str, clock: EpisodeClock) -> Path:
    """evidence/snapshots/LABEL.json, as the episode's snapshot (without the ConfigMaps, which only
    an API client reads, and the agent's restarts, which the runner counts). The `baseline` label
    records the protected tables' maximum ids first (baseline_ids.json), as the episode does; every
    other label counts from them."""
    evidence = run.writable_evidence()
    if label == "baseline":
        ids = max_ids(io, plan)
        write_atomic(run.baseline_ids, json.dumps(ids, sort_keys=True) + "\n")
    else:
        ids = run.read_baseline_ids()
    taken: Snapshot = take_snapshot(io, plan, clock.now(), ids)
    path = evidence / "snapshots" / f"{label}.json"
    write_model(path, taken)
    return path


def record_acked(io: HarnessIO, run: RunDir, label: str, clock: EpisodeClock) -> tuple[Path, dict[str, str]]:
    """evidence/acked_LABEL.json: what became of every acknowledged write (runner/acked.py), and
    the parts it could not read (part -> why), which it records as unreadable."""
    ids = run.read_baseline_ids()
    evidence = run.writable_evidence()
    path = evidence / f"acked_{label}.json"
    record = record_acked_state(io, clock.now(), ids)
    write_model(path, record)
    unreadable = {part: value.error for part, value in (("messages", record.messages), ("fanout", record.fanout))
                  if isinstance(value, PartUnreadable)}
    return path, unreadable


def sample(io: HarnessIO, plan: Plan, run: RunDir, clock: EpisodeClock, stop: threading.Event) -> list[Path]:
    """backlog.json and runs.json, sampled about once a plan second until `stop`, as the episode's
    samplers do (backlog.py); both written once more at the end."""
    evidence = run.writable_evidence()
    driver = driver_for(plan.substrate)
    samplers = (BacklogSamples(evidence / "backlog.json", clock, driver.queues),
                JobRunSamples(evidence / "runs.json", clock, driver.jobs))
    threads = [threading.Thread(target=s.sample, args=(io, stop), daemon=True) for s in samplers]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(timeout=15)
    for sampler in samplers:
        sampler.write()
    return [sampler.path for sampler in samplers]


# ---- the load generator ------------------------------------------------------------------------
def run_loadgen(plan: Plan, target: str, time_scale: float, run: RunDir, duration_s: float | None) -> int:
    """The plan's load against `target` in this process, until SIGTERM/SIGINT (or `duration_s` plan
    seconds), with the local backend's arguments: the ledger and acks.jsonl in the run's evidence,
    its ready file and live view beside it. The generator's exit code (arenac/loadgen/__main__.py)."""
    from arenac.loadgen.__main__ import main as loadgen_main  # lazily: the generator's own imports

    evidence = run.writable_evidence()
    run.ready.unlink(missing_ok=True)  # an earlier generator's clock is not this one's
    with tempfile.TemporaryDirectory(prefix="arenac-loadgen-") as scratch:
        profile = Path(scratch) / "profile.json"
        write_profile(plan, profile)
        args = loadgen_args(plan, target, time_scale, evidence / "ledger.json", profile, run.ready, run.live)
        if duration_s is not None:
            args += ["--duration-s", f"{duration_s:g}"]
        return loadgen_main(args)
