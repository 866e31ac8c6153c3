"""One episode's plan, driven on a backend (backend.py): the part of a trial that knows its timing.

provision -> warm up -> baseline snapshot -> inject faults (and decoys) on their onsets, and fire
their workload triggers -> assert each fault's manifestation (else the trial is void) -> agent_start
snapshot -> hand over to the agent -> declaration or window end
-> freeze the agent -> wait for the next load-cycle boundary -> agent-free soak (a declaration
never shortens it) -> what became of the acknowledged writes -> restart and retrigger challenges,
each observed under traffic for one cycle (the restart's from the first cycle boundary after the
restarted services settled, and followed by the acknowledged writes' record again; the retrigger's
from the retrigger); then (trial.py) tear down, judge and grade.

Every time is on one clock in plan seconds; `time_scale` compresses them all. Each step writes its
evidence (docs/evidence.md) as it ends; `InfraError` ends the episode as the harness's failure.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

from arenac.loadgen.acks import AckLog
from arenac.model.actions import touched_targets
from arenac.model.evidence import (
    Boundary,
    ChallengeRecord,
    ChallengeRestart,
    ChallengeRetrigger,
    HarnessChange,
    HarnessChanges,
    RecordedWindow,
    Snapshot,
    Timeline,
)
from arenac.runner import harness_adapters as adapters
from arenac.runner.acked import record_acked_state
from arenac.runner.agents import AgentSpec
from arenac.runner.backend import Backend, RunningAgent
from arenac.runner.backlog import BacklogSamples, JobRunSamples
from arenac.runner.harness_io import HarnessIO
from arenac.runner.onsets import Manifestation, Onsets
from arenac.runner.records import write_model
from arenac.runner.snapshot import max_ids
from arenac.runner.watch import LossWatch, changing_calls
from arenac.substrate.registry import driver_for


class InfraError(Exception):
    """The harness failed (not the agent): the trial is recorded as an infrastructure failure."""


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


# real seconds between a restart challenge and its re-check window (seen: 190-320 ms read p99s in
# the first cycle after restarting the channel service at time scale 0.1, beside two other episodes)
RESTART_SETTLE_S = 2.0


def cycle_boundary_at_or_after(t: float, first: float | None, cycle_s: float) -> float:
    """The first load-cycle boundary at or after plan time `t`, cycles of `cycle_s` starting at `first`
    (the warm-up's end); `t` itself when there are no cycles to align to."""
    if first is None or cycle_s <= 0:
        return t
    if t <= first:
        return first
    # a boundary a rounding error before `t` is `t`'s own: never wait a whole cycle for a float
    return first + math.ceil((t - first) / cycle_s - 1e-9) * cycle_s


class Episode:
    """The plan of one episode, driven on a backend (backend.py): the clock, onsets and
    manifestation, the handover, the freeze, the soak and the challenges, and their evidence."""

    def __init__(self, bundle, options, clock, log, evidence, scratch, stop, timeline: Timeline,
                 backend: Backend, sandbox: str = "none", sandbox_reason: str = ""):
        self.bundle, self.options, self.clock, self.log = bundle, options, clock, log
        self.backend = backend
        self.sandbox, self.sandbox_reason = sandbox, sandbox_reason  # the agent's sandbox: mechanism, why not
        self.step = "provision"  # the harness step under way (named when one fails)
        self.evidence, self.scratch, self.stop = evidence, scratch, stop
        # replaced, never changed in place, as the clock marks are reached (threads read it: _part_lost)
        self.timeline = timeline
        self.plan = bundle.plan
        self.faults = list(self.plan.faults) if options.inject_faults else []
        self.started = time.monotonic()
        self.io: HarnessIO | None = None
        self.agent: RunningAgent | None = None
        self.declared = threading.Event()
        self.window_closed = threading.Event()  # the agent declared, stopped, or its window ran out
        # the manifestation of each fault fired in the agent's window (None: the episode stopped first)
        self.in_window: dict[str, Manifestation | None] = {}
        self.agent_started = threading.Event()
        self.harness_changes: list[HarnessChange] = []  # what the harness changed after the handover
        self.changes_lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        substrate = driver_for(self.plan.substrate)
        self.backlog = BacklogSamples(evidence / "backlog.json", clock, substrate.queues)
        self.job_runs = JobRunSamples(evidence / "runs.json", clock, substrate.jobs)
        self.onsets = Onsets(clock, stop, log, evidence, scratch, perform=self._perform, spawn=self._thread,
                             live_snapshot=lambda: self.backend.snapshot(self.clock.now(), self.baseline_ids,
                                                                         configmaps=False))
        self.baseline_ids: dict[str, int] | None = None
        self.watch: LossWatch | None = None
        self.parts_reason: str | None = None  # why a lost part makes the trial an infra_error (watch.py)

    # ---- the episode ------------------------------------------------------------------------
    def run(self) -> None:
        warmup_end = self._provision_and_load()
        self._sleep_until(warmup_end)
        self.baseline_ids = max_ids(self._hands(), self.plan)
        self._snapshot("baseline")
        self._mark(warmup_end_s=round(warmup_end, 3))
        handover = self.clock.now()
        self._mark(handover_s=round(handover, 3))
        if not self._faults_manifested(handover):
            return
        self._snapshot("agent_start")
        declared_at, frozen_at = self._agent_window()
        self._snapshot("declaration")
        for fault in self.faults:
            if fault.recur_after_declare_s is not None:
                self.onsets.recur_at(fault, declared_at + fault.recur_after_declare_s)
        cycle = self.plan.timeline.cycle_s
        cycles_done = max(0.0, frozen_at - warmup_end) / cycle
        soak_start = warmup_end + (int(cycles_done) + 1) * cycle
        soak_end = soak_start + self.plan.timeline.soak_s
        self._mark(soak_start_s=round(soak_start, 3), soak_end_s=round(soak_end, 3))
        self.log("soak", start=soak_start, end=soak_end)
        self._sleep_until(soak_end)
        self._snapshot("soak_end")
        if not self._in_window_manifested():
            return
        # what became of every acknowledged write (protect table(messages), protect queue(fanout))
        self.step = "record of acknowledged writes"
        write_model(self.evidence / "acked_soak_end.json",
                    record_acked_state(self._hands(), self.clock.now(), self.baseline_ids))
        self.step = "challenges"
        self._checkpoint()  # a restart on purpose would replace a part lost just before it
        self._challenges()
        write_model(self.evidence / "harness_changes.json", HarnessChanges(changes=tuple(self.harness_changes)))
        self.log("challenges_done")
        self._checkpoint()  # a part lost since the last look still counts

    def _provision_and_load(self) -> float:
        """Start the substrate and the load; returns the plan time the warm-up ends."""
        io = self.io = self.backend.provision(healthy=not self.options.inject_faults)
        # the harness's own writes (send bursts) are acknowledged writes too (arenac/verify/acked.py)
        io.acks = AckLog(self.evidence / "harness_acks.jsonl", self.clock.now, source="harness", autoflush=True)
        self.log("provisioned", pids=len(self.backend.pids()), real_s=round(time.monotonic() - self.started, 3))
        adapters.copy_grading_inputs(self.bundle, self.evidence)  # live checks may refer to the baseline
        load = self.backend.start_load(self.evidence, live_file=self.evidence.parent / "live.json")
        self.clock.zero = load.zero  # plan time 0 is the load generator's start
        self.watch = self.backend.watch(self.clock, self._part_lost)
        self._thread(self.backlog.sample, io, self.stop)
        self._thread(self.job_runs.sample, io, self.stop)
        self.log("load_started")
        return load.warmup_end_s

    def _faults_manifested(self, handover: float) -> bool:
        """Schedule every fault's onset and wait for each (not a decoy) to show; False (the trial
        void, recorded) when one did not within its bound."""
        for fault in self.faults:
            if not _in_window(fault):  # those fire in the agent's window (_agent_window)
                self.onsets.schedule(fault, handover)
        for fault in self.faults:
            if fault.decoy or _in_window(fault):  # not the cause, or not yet: nothing to wait for now
                continue
            manifestation = self.onsets.await_manifestation(fault, handover)
            if manifestation is None:
                raise InfraError("interrupted")
            if not manifestation.manifested:
                self.timeline = self.timeline.ended("void", f"fault '{fault.name}' did not manifest within "
                                                            f"{fault.manifest_within_s:g}s of its onset")
                self.log("void", fault=fault.name, last_problem=manifestation.last_problem)
                return False
        return True

    def _agent_window(self) -> tuple[float, float]:
        """Hand over to the agent, wait for its declaration or the window's end, freeze it and close
        its doors; returns (declared at, frozen at) in plan seconds."""
        clock = self.clock
        doors = self.backend.open_doors(self.log, self.declared.set)
        agent = AgentSpec.parse(self.options.agent, self.bundle.solve_script)
        process = self.agent = self.backend.start_agent(agent, self.evidence.parent / "agent.log")
        self.agent_started.set()  # from here on, a substrate that refuses the harness may be the agent's doing
        agent_start = clock.now()
        self.log("agent_started", agent=agent.name, sandbox=self.sandbox,
                 **({"sandbox_reason": self.sandbox_reason} if self.sandbox_reason else {}))
        window_end = agent_start + self.plan.timeline.agent_window_s
        for fault in filter(_in_window, self.faults):
            self._thread(self._fire_in_window, fault, agent_start + fault.onset.after_s)
        while clock.now() < window_end and not self.declared.is_set() and process.running():
            if self.stop.wait(0.05):
                raise InfraError("interrupted")
        self.window_closed.set()
        declared_at = clock.now()
        frozen = process.freeze()
        frozen_at = clock.now()
        declared = self.declared.is_set()
        self._mark(declared_s=round(declared_at, 3) if declared else None, window_end_s=round(window_end, 3))
        write_model(self.evidence / "boundary.json", Boundary(
            agent=agent.name, declared=declared, declared_s=round(declared_at, 3), frozen_s=round(frozen_at, 3),
            processes_stopped=frozen.processes_stopped, method=frozen.method,
            processes_remaining=tuple(frozen.remaining), sandbox=self.sandbox,
            sandbox_reason=self.sandbox_reason or None, agent_exit_code=process.exit_code))
        self.log("agent_frozen", declared=declared, processes=frozen.processes_stopped, remaining=len(frozen.remaining))
        if frozen.remaining:
            raise InfraError(f"the freeze left {len(frozen.remaining)} agent process(es) running")
        ended = doors.close_agent_access()
        if ended:
            self.log("agent_calls_ended", processes=ended)  # tool calls still running at the freeze
        return declared_at, frozen_at

    def _challenges(self) -> None:
        """The restart and retrigger challenges, each observed under traffic for one load cycle."""
        clock, plan, cycle = self.clock, self.plan, self.plan.timeline.cycle_s
        restarts: list[ChallengeRestart] = []
        retriggers: list[ChallengeRetrigger] = []
        after_restart = after_retrigger = None
        if plan.challenges.restart:
            for service in plan.challenges.restart:
                ok = True
                try:
                    self.backend.restart(service)
                except Exception as error:  # a failed restart is evidence, not a crash
                    ok = False
                    self.log("restart_failed", service=service, error=str(error))
                restarts.append(ChallengeRestart(service=service, t=round(clock.now(), 3), ok=ok))
            # a restarted service's first requests pay for its cold start (new connection pools):
            # that is the restart's cost, not a lost repair, so the re-check starts once it settled,
            # at the next load-cycle boundary: it then observes one whole cycle as the soak does, and
            # a periodic job anchored to the cycles (spine's maintenance window) runs inside it once,
            # never on its edge where scheduling jitter decides whether it counts
            start = self._cycle_boundary_at_or_after(clock.now() + clock.plan(RESTART_SETTLE_S))
            self._sleep_until(start + cycle)
            after_restart = RecordedWindow(start_s=round(start, 3), end_s=round(clock.now(), 3))
            self._snapshot("after_restart")
            # what became of every acknowledged write across the restart (`protect queue(...) at
            # after_restart`); the soak-end record stays the one the agent is judged by otherwise
            write_model(self.evidence / "acked_after_restart.json",
                        record_acked_state(self._hands(), clock.now(), self.baseline_ids))
        if plan.challenges.retrigger:
            by_name = {f.name: f for f in self.faults}
            for name in plan.challenges.retrigger:
                if not self.options.inject_faults:  # the healthy control: no fault to fire again
                    retriggers.append(ChallengeRetrigger(fault=name, t=round(clock.now(), 3), ok=True,
                                                         not_fired="the healthy control injects no fault"))
                    continue
                fault = by_name.get(name)
                ok = fault is not None and self._perform(fault.retrigger, f"retrigger {name}")
                retriggers.append(ChallengeRetrigger(fault=name, t=round(clock.now(), 3), ok=ok))
            start = clock.now()
            self._sleep_until(start + cycle)
            after_retrigger = RecordedWindow(start_s=round(start, 3), end_s=round(clock.now(), 3))
            self._snapshot("after_retrigger")
        write_model(self.evidence / "challenges.json", ChallengeRecord(
            restart=tuple(restarts), retrigger=tuple(retriggers), after_restart=after_restart,
            after_retrigger=after_retrigger))

    # ---- parts lost ---------------------------------------------------------------------------
    def _checkpoint(self) -> None:
        """A fresh, strict look at every part; a loss that is not the agent's ends the episode."""
        if self.watch is not None:
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
    def _hands(self) -> HarnessIO:
        """The harness's hands on the substrate (provisioned first: anything else is a harness bug)."""
        if self.io is None:
            raise InfraError(f"harness step '{self.step}' before the substrate was provisioned")
        return self.io

    def _fire_in_window(self, fault, at: float) -> None:
        manifestation: Manifestation | None = None
        try:
            if self.onsets.fire_in_window(fault, at, self.window_closed) and not fault.decoy:
                manifestation = self.onsets.await_manifestation(fault, at)
        except Exception as error:  # its check could not run: it is not seen to manifest, and says why
            self.log("manifestation_check_failed", fault=fault.name, error=f"{type(error).__name__}: {error}")
            manifestation = Manifestation(False)
        finally:  # always answered: _in_window_manifested waits for it
            self.in_window[fault.name] = manifestation

    def _in_window_manifested(self) -> bool:
        """Whether every fault fired in the agent's window showed within its bound; False (the
        trial void, recorded) when one did not. Waits for each check to end (its bound after its
        onset, which the compiler keeps inside the window: E0526)."""
        for fault in (f for f in self.faults if _in_window(f) and not f.decoy):
            while fault.name not in self.in_window:
                if self.stop.wait(0.1):
                    raise InfraError("interrupted")
            manifestation = self.in_window[fault.name]
            if manifestation is None:
                raise InfraError("interrupted")
            if not manifestation.manifested:
                self.timeline = self.timeline.ended("void", f"fault '{fault.name}' did not manifest within "
                                                            f"{fault.manifest_within_s:g}s of its onset in the "
                                                            "agent's window")
                self.log("void", fault=fault.name, last_problem=manifestation.last_problem)
                return False
        return True

    def _cycle_boundary_at_or_after(self, t: float) -> float:
        return cycle_boundary_at_or_after(t, self.timeline.warmup_end_s, self.plan.timeline.cycle_s)

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
        write_model(self.evidence / "snapshots" / f"{label}.json", self._take_snapshot())
        self.log("snapshot", label=label)

    def _take_snapshot(self) -> Snapshot:
        """The backend's snapshot, stamped with when its reads ended as well as when they began: on
        a busy machine they take seconds of plan time, and the client's deletions meanwhile may be
        in what it read (verify/evidence.py `snapshot_read_until`)."""
        snapshot = self.backend.snapshot(self.clock.now(), self.baseline_ids)
        return snapshot.model_copy(update={"read_until": round(self.clock.now(), 3)})

    def _perform(self, actions, what: str) -> bool:
        index = None
        if self.agent_started.is_set():
            # recorded before acting: a half-done action may have changed its targets too
            targets = tuple(str(t) for t in touched_targets(actions))
            with self.changes_lock:  # onsets fire from threads of their own
                self.harness_changes.append(HarnessChange(t=round(self.clock.now(), 3), what=what, targets=targets))
                index = len(self.harness_changes) - 1
        try:
            bursts = self._hands().perform_all(actions)  # what a workload trigger achieved: a line in the timeline
            self.log("harness_action", what=what, ok=True, **({"bursts": bursts} if bursts else {}))
            return True
        except Exception as error:  # recorded; the episode goes on
            self.log("harness_action", what=what, ok=False, error=f"{type(error).__name__}: {error}")
            return False
        finally:
            if index is not None:
                self._snapshot_after_harness(index)

    def _snapshot_after_harness(self, index: int) -> None:
        """What the harness's change `index` left its targets at (`after_harness_N`), so that the
        agent's own later change of one of them still shows (verify/scope.py)."""
        label = f"after_harness_{index + 1}"
        try:
            write_model(self.evidence / "snapshots" / f"{label}.json", self._take_snapshot())
        except Exception as error:  # the targets stay the harness's, as in a run without the snapshot
            self.log("harness_snapshot", label=label, ok=False, error=f"{type(error).__name__}: {error}")
            return
        with self.changes_lock:
            self.harness_changes[index] = self.harness_changes[index].model_copy(update={"snapshot": label})

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
        self.backend.stop_agent_side()
        record(self.backlog.write)
        record(self.job_runs.write)
        for thread in self.threads:
            thread.join(timeout=5)
        self.backend.stop_substrate()
        record(adapters.copy_grading_inputs, self.bundle, self.evidence)
        self.log("torn_down")
        if unwritten:
            raise unwritten[0]


def _in_window(fault) -> bool:
    """A runtime fault whose onset is in the agent's window (`after agent start + D`)."""
    return fault.layer == "runtime" and fault.onset.kind == "in_window"
