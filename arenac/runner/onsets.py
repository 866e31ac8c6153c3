"""Each fault of an episode on the plan clock: its onset, its recurrence, and the check that it
manifested.

Contract: `schedule(fault, handover)` starts the fault (runtime faults at their onset: at the start,
after a delay, every period, or when a condition holds; the chart's layers are active since
provisioning, and only their workload triggers are fired at the handover) and records its onset
time in `times` (None until a `when` condition held). A runtime fault with an onset in the agent's
window is the episode's to time: `fire_in_window(fault, at, window_closed)` fires it at `at` or
when the window closes, whichever is first. `await_manifestation(fault, handover)` checks
the fault's manifestation predicate on the live evidence once a real second until it holds or the
bound passes (its `manifest_within`, at least the look-back of a hung request): a `Manifestation`,
or None when the episode was stopped. `recur_at(fault, at)` fires the fault again later. Every
action goes through the episode's `perform` (which records what the harness changed after the
handover); threads through its `spawn` (joined at teardown).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arenac.loadgen.generator import CLIENT_TIMEOUT_S
from arenac.model.evidence import Snapshot
from arenac.runner import harness_adapters as adapters
from arenac.runner.clock import EpisodeClock
from arenac.runner.records import EventLog, write_model

# the load generator's client timeout plus a second: the longest a hung request stays out of the ledger
HUNG_REQUEST_VISIBLE_S = CLIENT_TIMEOUT_S + 1.0


def fired_on(fault) -> str:
    """The kind of onset on which the episode fires the fault's injection (`schedule`): its own,
    except for a fault of a chart layer, active since provisioning, whose workload triggers (what is
    left of its injection) fire at the handover, as `at_start`."""
    return fault.onset.kind if fault.layer == "runtime" else "at_start"


@dataclass(frozen=True)
class Manifestation:
    """How a fault's manifestation check ended: `last_check` is its own last live evaluation (None
    when its deadline passed before one could be made), whose detail a void record carries."""

    manifested: bool
    last_check: adapters.LiveCheck | None = None

    @property
    def last_problem(self) -> str:
        return self.last_check.detail if self.last_check is not None else ""


class Onsets:
    def __init__(self, clock: EpisodeClock, stop: threading.Event, log: EventLog, evidence: Path, scratch: Path,
                 perform: Callable[..., bool], spawn: Callable[..., None], live_snapshot: Callable[[], Snapshot]):
        self.clock, self.stop, self.log, self.evidence, self.scratch = clock, stop, log, evidence, scratch
        self.perform, self.spawn, self.live_snapshot = perform, spawn, live_snapshot
        self.times: dict[str, float | None] = {}  # plan time each fault first fired
        self._live_taken = 0.0  # time.monotonic() of the last live snapshot

    def schedule(self, fault, handover: float) -> None:
        """Start the fault's onset: now for the chart's layers (only its workload triggers are left
        to fire), at its time, periodically, or when its condition holds."""
        onset = fault.onset
        if onset.kind == "in_window" and fault.layer == "runtime":
            raise ValueError(f"fault '{fault.name}' fires in the agent's window: the episode times it (fire_in_window)")
        if fault.layer != "runtime":
            self.log("onset", fault=fault.name, layer=fault.layer, note="active since provisioning (chart)")
            self.times[fault.name] = 0.0
            if fault.inject:  # what is left after the chart's part: workload triggers (send bursts)
                self.spawn(self._inject_at, fault, handover)
            return
        if onset.kind in ("at_start", "after"):
            at = handover + (onset.after_s if onset.kind == "after" else 0.0)
            self.times[fault.name] = at
            self.spawn(self._inject_at, fault, at)
        elif onset.kind == "every":
            first = handover + onset.offset_s
            self.times[fault.name] = first
            self.spawn(self._periodic, fault, handover)
        else:  # when
            self.times[fault.name] = None
            self.spawn(self._inject_when, fault)

    def fire_in_window(self, fault, at: float, window_closed: threading.Event) -> bool:
        """An `after agent start + D` fault: fired at plan time `at` (the agent's start + D), or when
        the agent's window closes if that comes first (a declaration before the incident does not
        spare the agent it). False when the episode was stopped first."""
        while self.clock.now() < at and not window_closed.is_set():
            if self.stop.wait(min(0.05, self.clock.real(at - self.clock.now()))):
                return False
        self.times[fault.name] = self.clock.now()
        self.log("onset", fault=fault.name, in_window=True,
                 **({"at_window_close": True} if self.clock.now() < at else {}))
        self.perform(fault.inject, f"inject {fault.name}")
        return True

    def _inject_at(self, fault, at: float) -> None:
        if self.clock.sleep_until(at, self.stop):
            self.log("onset", fault=fault.name)
            self.perform(fault.inject, f"inject {fault.name}")

    def _periodic(self, fault, handover: float) -> None:
        onset = fault.onset
        start = handover + onset.offset_s
        while not self.stop.is_set():
            if not self.clock.sleep_until(start, self.stop):
                return
            self.log("onset", fault=fault.name, periodic=True)
            self.perform(fault.inject, f"inject {fault.name}")
            # the plan carries no repair (that is the answer key), so a periodic runtime fault is
            # re-fired at every window's start rather than reverted at its end
            start += onset.every_s

    def _inject_when(self, fault) -> None:
        while not self.stop.is_set():
            if adapters.check_live(fault.onset.when, self.evidence, self.clock.now(), 10.0).holds:
                self.times[fault.name] = self.clock.now()
                self.log("onset", fault=fault.name, when=fault.onset.when.text)
                self.perform(fault.inject, f"inject {fault.name}")
                return
            self.stop.wait(self.clock.real(1.0))

    def recur_at(self, fault, at: float) -> None:
        """Fire the fault again (its retrigger, else its injection) at plan time `at`."""
        self.spawn(self._recur, fault, at)

    def _recur(self, fault, at: float) -> None:
        if self.clock.sleep_until(at, self.stop):
            self.log("recur", fault=fault.name)
            self.perform(fault.retrigger or fault.inject, f"recur {fault.name}")

    def await_manifestation(self, fault, handover: float) -> Manifestation | None:
        """Wait until the fault's symptom shows or its bound passes; None when the episode stopped."""
        # A hung request reaches the ledger only when it times out, after real seconds that the
        # plan clock does not compress: neither the bound nor the look-back may be shorter.
        timeouts = self.clock.plan(HUNG_REQUEST_VISIBLE_S)
        deadline_after_onset = max(fault.manifest_within_s, timeouts)
        last_check: adapters.LiveCheck | None = None  # this fault's own, whatever runs beside it
        while True:
            onset_t = self.times.get(fault.name)
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
                return None

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
        if time.monotonic() - self._live_taken >= 1.0:
            write_model(live / "snapshots" / "declaration.json", self.live_snapshot())
            self._live_taken = time.monotonic()
        return live
