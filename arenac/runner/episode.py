"""One episode on the local backend, end to end.

provision -> warm up -> baseline snapshot -> inject faults (and decoys) on their onsets, and fire
their workload triggers -> assert each fault's manifestation (else the trial is void) -> agent_start
snapshot -> hand over to the agent -> declaration or window end
-> freeze the agent -> wait for the next load-cycle boundary -> agent-free soak (a declaration
never shortens it) -> restart and retrigger challenges, each observed under traffic for one
cycle -> collect evidence -> grade -> tear down.

Every time is on one clock in plan seconds; `time_scale` compresses them all. The result is the
run directory described in docs/evidence.md: marked INCOMPLETE from its first write until its
verdict and reward are written (records.begin_run / finish_run), so that a runner killed midway
leaves a directory that nothing grades or reuses.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import redis

from arenac.loadgen.acks import AckLog
from arenac.loadgen.generator import CLIENT_TIMEOUT_S
from arenac.model.actions import touched_targets
from arenac.model.evidence import (
    Backlog,
    Boundary,
    ChallengeRecord,
    ChallengeRestart,
    ChallengeRetrigger,
    HarnessChange,
    HarnessChanges,
    RecordedWindow,
    Timeline,
)
from arenac.runner import harness_adapters as adapters
from arenac.runner import headroom
from arenac.runner.acked import record_acked_state
from arenac.runner.agents import AgentLaunch, AgentSpec, claim_agent_account, start_agent
from arenac.runner.bundle import RunnableBundle
from arenac.runner.clock import EpisodeClock
from arenac.runner.harness_io import HarnessIO
from arenac.runner.records import EventLog, begin_run, finish_run, write_model
from arenac.runner.snapshot import max_ids, take_snapshot
from arenac.runner.state import StateDir
from arenac.runner.watch import PartsWatch, changing_calls
from arenac.sandbox import SandboxChoice, probe
from arenac.substrate.registry import driver_for


class InfraError(Exception):
    """The harness failed (not the agent): the trial is recorded as an infrastructure failure."""


def _substrate_error(error: BaseException) -> bool:
    """An error of the harness's hands on the substrate (a refused, reset or timed-out connection,
    a database or Redis error): after the handover the agent may have caused it. Other OS errors
    (a full disk, a missing file) are the harness's own."""
    return isinstance(error, (ConnectionError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError,
                              redis.RedisError))


@dataclass(frozen=True)
class Isolation:
    """How the agent is confined (the operator's choice; docs/security.md)."""

    sandbox: str = "auto"  # auto | bwrap | none (sandbox.py)
    agent_network: str = "private"  # private: the agent's own loopback only; host: the machine's
    agent_ro: tuple[Path, ...] = ()  # directories the agent's own program needs, bound read-only


@dataclass(frozen=True)
class EpisodeOptions:
    agent: str
    time_scale: float
    out: Path
    inject_faults: bool = True  # False: the healthy control
    progress: bool = False
    isolation: Isolation = Isolation()
    # what binds the episode's processes to its lifetime (lifetime.py): "cgroup", or
    # "process records (why no cgroup)" when they are bound only by state.py's records
    bound_by: str = "process records (in the runner's process)"
    cgroup: Path | None = None  # the episode's own cgroup, when it has one (its CPU use: headroom.py)


@dataclass(frozen=True)
class EpisodeResult:
    out: Path
    status: str  # scored | void | infra_error
    reward: int
    outcome: bool
    safe_repair: bool
    wall_s: float
    reason: str = ""  # why a trial is not scored (void, infra_error) or failed: the timeline's void_reason


def run_episode(bundle: RunnableBundle, options: EpisodeOptions, stop: threading.Event | None = None) -> EpisodeResult:
    """One episode; raises SandboxUnavailable (before anything starts) when the sandbox asked for
    cannot be had."""
    started = time.monotonic()
    sandbox = probe(options.isolation.sandbox)
    stop = _linked(stop)  # the caller's stop (Ctrl-C) ends this episode; its own teardown ends only it
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)  # the agent's user cannot read the run directory
    record = begin_run(out, bundle, options)  # marked INCOMPLETE until finish_run (records.py)
    evidence = out / "evidence"
    evidence.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="arenac-episode-"))
    os.chmod(scratch, 0o711)  # others may pass through (the agent's tools and workdir), never list
    state = StateDir.default().register(scratch)
    clock = EpisodeClock(options.time_scale)
    log = EventLog(out / "events.jsonl", clock)
    episode = _Episode(bundle, options, clock, log, evidence, scratch, state, stop,
                       Timeline.begun(options.time_scale, options.bound_by), sandbox)
    headroom_probe = headroom.HeadroomProbe.start(options.cgroup)  # the harness's headroom, to the end

    def end(status: str, reason: str) -> None:
        episode.timeline = episode.timeline.ended(status, reason)
        log(status, reason=reason)

    try:
        episode.run()
    except InfraError as error:
        end("infra_error", episode.parts_reason or str(error))
    except Exception as error:  # noqa: BLE001 - any harness crash is an infrastructure failure, not the agent's
        reason = f"{type(error).__name__}: {error}"
        if episode.parts_reason:  # a lost part of the harness or substrate that the agent did not cause
            end("infra_error", f"{episode.parts_reason} ({reason})")
        elif episode.agent_started.is_set() and _substrate_error(error):
            # the substrate refused the harness after the agent had it: the agent's failure, scored as such
            end("failed", f"harness step '{episode.step}' failed after the handover: {reason}")
        else:
            end("infra_error", reason)
    finally:
        unwritten: OSError | None = None
        figures = headroom_probe.stop(evidence / "ledger.json")
        try:
            episode.teardown()
        except OSError as error:  # the run directory would not take the evidence (a full disk)
            unwritten = error
        agent_bytes = _tree_bytes(scratch / "agent")
        shutil.rmtree(scratch, ignore_errors=True)
        state.unregister(scratch)
    unwritten = unwritten or log.write_error
    timeline = episode.timeline
    if unwritten is not None:
        reason = f"the run directory could not be written: {unwritten}"
        if agent_bytes > AGENT_DISK_BLAME_BYTES:  # the agent filled the disk: its failure, not a void
            timeline = timeline.ended("failed", f"{reason}, while the agent's files took "
                                                f"{agent_bytes >> 20} MiB of the machine's disk")
        else:
            timeline = timeline.ended("infra_error", reason)
    else:
        judged = headroom.apply(timeline, figures)
        if judged.status != timeline.status:  # a starved harness: its trial is not scored
            log("infra_error", reason=judged.void_reason)
        timeline = judged
    timeline = timeline.finished()
    try:
        write_model(evidence / "headroom.json", figures)
        write_model(evidence / "timeline.json", timeline)
        if unwritten is not None:  # evidence is missing: there is nothing to grade
            return EpisodeResult(out, timeline.status, 0, False, False, round(time.monotonic() - started, 2),
                                 timeline.void_reason or "")
        verdict = adapters.grade(out, bundle)
    except OSError as error:
        return EpisodeResult(out, "infra_error", 0, False, False, round(time.monotonic() - started, 2),
                             f"the run directory could not be written: {error}")
    log("graded", **verdict.reward_record().model_dump())
    result = EpisodeResult(out, timeline.status, verdict.reward, verdict.outcome, verdict.safe_repair,
                           round(time.monotonic() - started, 2), timeline.void_reason or "")
    finish_run(out, record, result.wall_s)  # verdict.json and reward.json are written: complete
    return result


# an agent whose files outgrow this when the disk fills is the one that filled it (an honest repair
# writes kilobytes: notes, a patch, a dump of a table)
AGENT_DISK_BLAME_BYTES = 64 << 20


def _tree_bytes(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


def _read_actions(path: Path) -> list[dict]:
    """The broker's record of the agent's calls so far (a line being written is left out)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    actions = []
    for line in lines:
        try:
            actions.append(json.loads(line))
        except ValueError:
            continue
    return actions


def _linked(outer: threading.Event | None) -> threading.Event:
    inner = threading.Event()
    if outer is not None:
        def follow() -> None:
            while not inner.is_set():
                if outer.wait(0.2):
                    inner.set()
        threading.Thread(target=follow, daemon=True, name="arenac-stop-link").start()
    return inner


# the load generator's client timeout plus a second: the longest a hung request stays out of the ledger
HUNG_REQUEST_VISIBLE_S = CLIENT_TIMEOUT_S + 1.0
# real seconds between a restart challenge and its re-check window (seen: 190-320 ms read p99s in
# the first cycle after restarting the channel service at time scale 0.1, beside two other episodes)
RESTART_SETTLE_S = 2.0


def _harden(data_dir: Path) -> None:
    """The agent can see the services' command lines (and so this directory's path): nothing in it
    that carries credentials may be readable by another user."""
    for name in ("endpoints.json", "pgpass", "secrets.json"):
        path = data_dir / name
        if path.exists():
            os.chmod(path, 0o600)
    for name in ("redis", "config", "logs"):
        path = data_dir / name
        if path.is_dir():
            os.chmod(path, 0o700)


@dataclass(frozen=True)
class Manifestation:
    """How a fault's manifestation check ended: `last_check` is its own last live evaluation (None
    when its deadline passed before one could be made), whose detail a void record carries."""

    manifested: bool
    last_check: adapters.LiveCheck | None = None

    @property
    def last_problem(self) -> str:
        return self.last_check.detail if self.last_check is not None else ""


class _Episode:
    def __init__(self, bundle, options, clock, log, evidence, scratch, state, stop, timeline: Timeline,
                 sandbox: SandboxChoice):
        self.bundle, self.options, self.clock, self.log = bundle, options, clock, log
        self.sandbox = sandbox
        self.step = "provision"  # the harness step under way (named when one fails)
        self.evidence, self.scratch, self.state, self.stop = evidence, scratch, state, stop
        # replaced, never changed in place, as the clock marks are reached (threads read it: _part_lost)
        self.timeline = timeline
        self.plan = bundle.plan
        self.started = time.monotonic()
        self.stack = None
        self.io: HarnessIO | None = None
        self.loadgen = None
        self.broker = None
        self.agent = None
        self.account_lock = None  # holds this episode's agent user while it runs
        self.declared = threading.Event()
        self.agent_started = threading.Event()
        self.harness_changes: list[HarnessChange] = []  # what the harness changed after the handover
        self.threads: list[threading.Thread] = []
        self.backlog: dict[str, list[tuple[float, int]]] = {q: [] for q in ("fanout",)}  # queue -> (t, length)
        self._backlog_lock = threading.Lock()
        self.onset_times: dict[str, float | None] = {}  # plan time each fault first fired
        self.baseline_ids: dict[str, int] | None = None
        self.watch: PartsWatch | None = None
        self.parts_reason: str | None = None  # why a lost part makes the trial an infra_error (watch.py)

    # ---- the episode ------------------------------------------------------------------------
    def run(self) -> None:
        plan, clock, log, S = self.plan, self.clock, self.log, self.options.time_scale
        faults = list(plan.faults) if self.options.inject_faults else []
        substrate = driver_for(plan.substrate)
        self.stack = substrate.provision(self.scratch / "substrate", self.bundle.directory, S,
                                         healthy=not self.options.inject_faults)
        endpoints = self.stack.start()
        self.state.record_pids(self.scratch, self.stack.pids())
        _harden(self.scratch / "substrate")
        self.io = HarnessIO(endpoints, substrate)
        self.io.acks = AckLog(self.evidence / "harness_acks.jsonl", clock.now, source="harness", autoflush=True)
        log("provisioned", pids=len(self.stack.pids()), real_s=round(time.monotonic() - self.started, 3))

        adapters.copy_grading_inputs(self.bundle, self.evidence)  # live checks may refer to the baseline
        self.loadgen = adapters.start_loadgen(plan, endpoints.gateway, S, self.evidence / "ledger.json", self.scratch,
                                              live_file=self.evidence.parent / "live.json")
        self.state.record_pids(self.scratch, {"loadgen": self.loadgen.pid})
        self.clock.zero = self.loadgen.zero  # plan time 0 is the load generator's start
        self.watch = PartsWatch(self.stack, self.loadgen, clock, on_loss=self._part_lost).start()
        self._thread(self._sample_backlog)
        log("load_started")

        warmup_end = self.loadgen.warmup_end_s
        self._sleep_until(warmup_end)
        self.baseline_ids = max_ids(self.io, plan)
        self._snapshot("baseline")
        self._mark(warmup_end_s=round(warmup_end, 3))

        handover = clock.now()
        self._mark(handover_s=round(handover, 3))
        for fault in faults:
            self._schedule_onset(fault, handover)
        for fault in faults:
            if fault.decoy:  # not the cause: nothing to wait for
                continue
            manifestation = self._await_manifestation(fault, handover)
            if not manifestation.manifested:
                self.timeline = self.timeline.ended("void", f"fault '{fault.name}' did not manifest within "
                                                            f"{fault.manifest_within_s:g}s of its onset")
                log("void", fault=fault.name, last_problem=manifestation.last_problem)
                return

        self._snapshot("agent_start")
        sandboxed = self.sandbox.mechanism == "bwrap"
        self.broker = adapters.start_broker(self.bundle, self.stack, self.scratch, self.log, self.declared.set,
                                            sandboxed=sandboxed)
        self.state.record_pids(self.scratch, {})
        agent = AgentSpec.parse(self.options.agent, self.bundle.solve_script)
        account, self.account_lock = claim_agent_account(self.state.root)
        launch = AgentLaunch(workdir=self.scratch / "agent" / "work", tools_dir=self.broker.tools_dir,
                             broker_dir=self.broker.socket_dir, instruction=self.bundle.instruction_bytes,
                             oracle_script=self.bundle.solve_script_bytes, log=self.evidence.parent / "agent.log",
                             account=account, sandbox=self.sandbox, extra_env=self.broker.agent_env(),
                             extra_ro=self.options.isolation.agent_ro,
                             network=self.options.isolation.agent_network)
        self.agent = start_agent(agent, launch)
        self.agent_started.set()  # from here on, a substrate that refuses the harness may be the agent's doing
        self.state.record_pids(self.scratch, {"agent": self.agent.process.pid})
        agent_start = clock.now()
        log("agent_started", agent=agent.name, sandbox=self.sandbox.mechanism,
            **({"sandbox_reason": self.sandbox.reason} if self.sandbox.reason else {}))
        window_end = agent_start + plan.timeline.agent_window_s
        while clock.now() < window_end and not self.declared.is_set() and self.agent.running():
            if self.stop.wait(0.05):
                raise InfraError("interrupted")
        declared_at = clock.now()
        frozen = self.agent.freeze()
        frozen_at = clock.now()
        declared = self.declared.is_set()
        self._mark(declared_s=round(declared_at, 3) if declared else None, window_end_s=round(window_end, 3))
        write_model(self.evidence / "boundary.json", Boundary(
            agent=agent.name, declared=declared, declared_s=round(declared_at, 3), frozen_s=round(frozen_at, 3),
            processes_stopped=frozen.processes_stopped, method=frozen.method,
            processes_remaining=tuple(frozen.remaining), sandbox=self.sandbox.mechanism,
            sandbox_reason=self.sandbox.reason or None, agent_exit_code=self.agent.process.returncode))
        log("agent_frozen", declared=declared, processes=frozen.processes_stopped, remaining=len(frozen.remaining))
        if frozen.remaining:
            raise InfraError(f"the freeze left {len(frozen.remaining)} agent process(es) running")
        ended = self.broker.close_agent_access()
        if ended:
            log("agent_calls_ended", processes=ended)  # tool calls still running at the freeze
        self._snapshot("declaration")
        for fault in faults:
            if fault.recur_after_declare_s is not None:
                self._thread(self._recur, fault, declared_at + fault.recur_after_declare_s)

        cycle = plan.timeline.cycle_s
        cycles_done = max(0.0, frozen_at - warmup_end) / cycle
        soak_start = warmup_end + (int(cycles_done) + 1) * cycle
        soak_end = soak_start + plan.timeline.soak_s
        self._mark(soak_start_s=round(soak_start, 3), soak_end_s=round(soak_end, 3))
        log("soak", start=soak_start, end=soak_end)
        self._sleep_until(soak_end)
        self._snapshot("soak_end")
        # what became of every acknowledged write (protect table(messages), protect queue(fanout))
        self.step = "record of acknowledged writes"
        write_model(self.evidence / "acked_soak_end.json", record_acked_state(self.io, clock.now(), self.baseline_ids))

        restarts: list[ChallengeRestart] = []
        retriggers: list[ChallengeRetrigger] = []
        after_restart = after_retrigger = None
        self.step = "challenges"
        self._checkpoint()  # a restart on purpose would replace a part lost just before it
        if plan.challenges.restart:
            for service in plan.challenges.restart:
                ok = True
                try:
                    self.stack.restart_service(service)
                except Exception as error:  # noqa: BLE001 - a failed restart is evidence, not a crash
                    ok = False
                    log("restart_failed", service=service, error=str(error))
                restarts.append(ChallengeRestart(service=service, t=round(clock.now(), 3), ok=ok))
            self.state.record_pids(self.scratch, self.stack.pids())
            # a restarted service's first requests pay for its cold start (new connection pools):
            # that is the restart's cost, not a lost repair, so the re-check starts once it settled
            self._sleep_until(clock.now() + clock.plan(RESTART_SETTLE_S))
            start = clock.now()
            self._sleep_until(start + cycle)
            after_restart = RecordedWindow(start_s=round(start, 3), end_s=round(clock.now(), 3))
            self._snapshot("after_restart")
        if plan.challenges.retrigger:
            by_name = {f.name: f for f in faults}
            for name in plan.challenges.retrigger:
                fault = by_name.get(name)
                ok = fault is not None
                if fault is not None:
                    ok = self._perform(fault.retrigger, f"retrigger {name}")
                retriggers.append(ChallengeRetrigger(fault=name, t=round(clock.now(), 3), ok=ok))
            start = clock.now()
            self._sleep_until(start + cycle)
            after_retrigger = RecordedWindow(start_s=round(start, 3), end_s=round(clock.now(), 3))
            self._snapshot("after_retrigger")
        write_model(self.evidence / "challenges.json", ChallengeRecord(
            restart=tuple(restarts), retrigger=tuple(retriggers), after_restart=after_restart,
            after_retrigger=after_retrigger))
        write_model(self.evidence / "harness_changes.json", HarnessChanges(changes=tuple(self.harness_changes)))
        log("challenges_done")
        self._checkpoint()  # a part lost since the last look still counts

    # ---- parts lost ---------------------------------------------------------------------------
    def _checkpoint(self) -> None:
        """A fresh, strict look at every part; a loss that is not the agent's ends the episode."""
        self.watch.check(strict=True)
        if self.parts_reason:
            raise InfraError(self.parts_reason)

    def _part_lost(self) -> None:
        """The watch saw a part exit or stop: when that makes the trial the infrastructure's
        failure, the episode stops at once (the reason replaces "interrupted")."""
        if self.parts_reason or self.watch is None or not self.watch.losses:
            return
        reason = self.watch.blame(self.timeline.handover_s if self.agent_started.is_set() else None,
                                  changing_calls(_read_actions(self.evidence.parent / "actions.jsonl")))
        if reason:
            self.parts_reason = reason
            self.log("part_lost", reason=reason)
            self.stop.set()

    # ---- helpers --------------------------------------------------------------------------------
    def _mark(self, **times: float | None) -> None:
        """Record clock marks (plan seconds) in the timeline."""
        self.timeline = self.timeline.model_copy(update=times)

    def _sleep_until(self, plan_t: float) -> None:
        if not self.clock.sleep_until(plan_t, self.stop):
            raise InfraError("interrupted")

    def _thread(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _snapshot(self, label: str) -> None:
        self.step = f"snapshot {label}"
        snapshot = take_snapshot(self.io, self.plan, self.clock.now(), self.baseline_ids, stack=self.stack)
        write_model(self.evidence / "snapshots" / f"{label}.json", snapshot)
        self.log("snapshot", label=label)

    def _perform(self, actions, what: str) -> bool:
        if self.agent_started.is_set():
            # recorded before acting: a half-done action may have changed its targets too
            targets = [str(t) for t in touched_targets(actions)]
            self.harness_changes.append(HarnessChange(t=round(self.clock.now(), 3), what=what, targets=tuple(targets)))
        try:
            bursts = []  # what a workload trigger achieved is worth a line in the timeline
            for action in actions:
                result = self.io.perform(action)
                if action.kind == "send_burst":
                    bursts.append(result)
            self.log("harness_action", what=what, ok=True, **({"bursts": bursts} if bursts else {}))
            return True
        except Exception as error:  # noqa: BLE001 - recorded; the episode goes on
            self.log("harness_action", what=what, ok=False, error=f"{type(error).__name__}: {error}")
            return False

    def _schedule_onset(self, fault, handover: float) -> None:
        onset = fault.onset
        if fault.layer != "runtime":
            self.log("onset", fault=fault.name, layer=fault.layer, note="active since provisioning (chart)")
            self.onset_times[fault.name] = 0.0
            if fault.inject:  # what is left after the chart's part: workload triggers (send bursts)
                self._thread(self._inject_at, fault, handover)
            return
        if onset.kind in ("at_start", "after"):
            at = handover + (onset.after_s if onset.kind == "after" else 0.0)
            self.onset_times[fault.name] = at
            self._thread(self._inject_at, fault, at)
        elif onset.kind == "every":
            first = handover + onset.offset_s
            self.onset_times[fault.name] = first
            self._thread(self._periodic, fault, handover)
        else:  # when
            self.onset_times[fault.name] = None
            self._thread(self._inject_when, fault)

    def _inject_at(self, fault, at: float) -> None:
        if self.clock.sleep_until(at, self.stop):
            self.log("onset", fault=fault.name)
            self._perform(fault.inject, f"inject {fault.name}")

    def _periodic(self, fault, handover: float) -> None:
        onset = fault.onset
        start = handover + onset.offset_s
        while not self.stop.is_set():
            if not self.clock.sleep_until(start, self.stop):
                return
            self.log("onset", fault=fault.name, periodic=True)
            self._perform(fault.inject, f"inject {fault.name}")
            # the plan carries no repair (that is the answer key), so a periodic runtime fault is
            # re-fired at every window's start rather than reverted at its end
            start += onset.every_s

    def _inject_when(self, fault) -> None:
        while not self.stop.is_set():
            if adapters.check_live(fault.onset.when, self.evidence, self.clock.now(), 10.0).holds:
                self.onset_times[fault.name] = self.clock.now()
                self.log("onset", fault=fault.name, when=fault.onset.when.text)
                self._perform(fault.inject, f"inject {fault.name}")
                return
            self.stop.wait(self.clock.real(1.0))

    def _recur(self, fault, at: float) -> None:
        if self.clock.sleep_until(at, self.stop):
            self.log("recur", fault=fault.name)
            self._perform(fault.retrigger or fault.inject, f"recur {fault.name}")

    def _await_manifestation(self, fault, handover: float) -> Manifestation:
        # A hung request reaches the ledger only when it times out, after real seconds that the
        # plan clock does not compress: neither the bound nor the look-back may be shorter.
        timeouts = self.clock.plan(HUNG_REQUEST_VISIBLE_S)
        deadline_after_onset = max(fault.manifest_within_s, timeouts)
        last_check: adapters.LiveCheck | None = None  # this fault's own, whatever runs beside it
        while True:
            onset_t = self.onset_times.get(fault.name)
            now = self.clock.now()
            if onset_t is not None:
                # the symptom over the recent past since the onset (at least the last 20 plan seconds);
                # the ledger on disk trails by its flush interval, hence the grace after the deadline
                since = max(onset_t, now - max(20.0, timeouts))
                if now > since + 2.0:
                    last_check = adapters.check_live(fault.manifest, self._live_evidence(fault.manifest), now,
                                                     now - since)
                    if last_check.holds:
                        self.log("manifested", fault=fault.name, after_s=round(now - onset_t, 3))
                        return Manifestation(True, last_check)
                grace = self.clock.time_scale and 1.0 / self.clock.time_scale  # one real second
                if now > max(onset_t, handover) + deadline_after_onset + grace:
                    return Manifestation(False, last_check)
            if self.stop.wait(self.clock.real(1.0)):
                raise InfraError("interrupted")

    def _live_evidence(self, predicate) -> Path:
        """Evidence for a live check: the growing ledger and, when the predicate reads state
        (violations of a sequence), a fresh snapshot taken at most once a real second."""
        if "violations(" not in predicate.text:
            return self.evidence
        live = self.scratch / "live"
        if not live.exists():
            (live / "snapshots").mkdir(parents=True)
            # absolute targets: the run directory may have been given as a relative path
            (live / "ledger.json").symlink_to((self.evidence / "ledger.json").resolve())
            (live / "baseline.json").symlink_to((self.evidence / "baseline.json").resolve())
        if time.monotonic() - getattr(self, "_live_taken", 0.0) >= 1.0:
            snapshot = take_snapshot(self.io, self.plan, self.clock.now(), self.baseline_ids)
            write_model(live / "snapshots" / "declaration.json", snapshot)
            self._live_taken = time.monotonic()
        return live

    def _sample_backlog(self) -> None:
        while not self.stop.is_set():
            try:
                # int(): a reply without a length is a gap in the samples, never a null in the file
                backlog = int(self.io.admin("fanout", "GET", "/admin/backlog")["backlog"])
                self.backlog["fanout"].append((round(self.clock.now(), 3), backlog))
                self._write_backlog()  # live checks (a fault's manifestation) read it as it grows
            except Exception:  # noqa: BLE001 - a restart window; the gap shows in the samples
                pass
            if self.stop.wait(self.clock.real(1.0)):
                return

    def _write_backlog(self) -> None:
        with self._backlog_lock:
            write_model(self.evidence / "backlog.json",
                        Backlog(queues={queue: tuple(samples) for queue, samples in self.backlog.items()}))

    def teardown(self) -> None:
        """Stop everything the episode started, whatever fails on the way: a write that fails (a
        full disk) is raised only after every process is stopped."""
        unwritten: list[OSError] = []

        def record(write, *args) -> None:
            try:
                write(*args)
            except OSError as error:
                unwritten.append(error)

        self.stop.set()
        if self.watch is not None:  # before anything is stopped on purpose
            self.watch.stop()
            record(write_model, self.evidence / "parts.json", self.watch.record())
        if self.agent is not None and self.agent.running():
            self.agent.freeze()
        if self.account_lock is not None:
            self.account_lock.close()
        if self.broker is not None:
            self.broker.stop()
        if self.loadgen is not None:
            self.loadgen.stop()
        record(self._write_backlog)
        for thread in self.threads:
            thread.join(timeout=5)
        if self.io is not None:
            self.io.close()
        if self.stack is not None:
            self.stack.stop()
        record(adapters.copy_grading_inputs, self.bundle, self.evidence)
        self.log("torn_down")
        if unwritten:
            raise unwritten[0]
