"""The harness's own scheduling headroom during an episode, and when it was too little to score.

Contract:
- `HeadroomProbe.start(cgroup)` is called before provisioning and `probe.stop(ledger)` at the end
  of the challenges (or wherever the episode ended); `stop` returns a `Headroom`, which the runner
  writes as `evidence/headroom.json` (docs/evidence.md). Over that window it measures:
  - timer: a sampler process (headroom_sampler.py) sleeps TIMER_INTERVAL_S real seconds in a loop
    and reports how late each wake-up was. A process of its own, not a thread of the episode: the
    episode's threads hold the GIL for tens of milliseconds at a time (live checks parse the whole
    ledger, snapshots), which is the harness's own work, not a starved machine. It leaves when its
    parent does.
  - loadgen: the load generator's own start lag (how late it started requests), from the
    `start_lag` the generator writes into every ledger.json.
  - machine: /proc/stat (busy and steal time), /proc/pressure/cpu (PSI "some": the share of time
    at least one runnable task waited for a CPU) and /proc/loadavg.
  - cgroup, when the episode runs in one (worker.py passes its path in EpisodeOptions.cgroup):
    its cpu.stat usage_usec (the CPU the episode itself used, in cores; also sampled once a
    second for its busiest seconds) and its cpu.pressure (the share of time one of the episode's
    own processes waited for a CPU).
  A source this machine lacks is named in `missing`, with the reason; the probe never raises.
- `overloaded(headroom) -> str | None`: the reason when the harness was starved (its thresholds
  and their calibration: docs/performance.md, "Harness headroom"); `Headroom.overloaded` holds it.
  `apply(timeline, headroom)` returns the timeline with the summary recorded in it, a scored or
  failed one turned into infra_error with that reason (a void stays void: nothing was measured of
  the agent).
- How many episodes the machine holds before a qualification starts: capacity.py.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from array import array
from pathlib import Path

from arenac.model.evidence import StartLag, Timeline, TimelineHeadroom
from arenac.model.headroom import CgroupFigures, Headroom, LoadgenFigures, MachineFigures, TimerFigures

# the sampler's sleep, real seconds: short enough for a few thousand samples per episode (20 a
# second), long enough that its own CPU (a wake-up and a line on a pipe) is nothing
TIMER_INTERVAL_S = 0.05
# a wake-up this late counts as late in `late_share`: well above the few milliseconds a busy but
# healthy scheduler gives a sleeper (CFS/EEVDF slices are ~3 ms), well below a request's latency
LATE_MS = 10.0
# fewer samples than this (a trial that ended within seconds) say nothing about the tail
MIN_TIMER_SAMPLES = 100

# where the kernel's figures are (module names, so that a test can take them away)
PROC_STAT = Path("/proc/stat")
PROC_PRESSURE = Path("/proc/pressure/cpu")
PROC_LOADAVG = Path("/proc/loadavg")
# the sampler by file, isolated and without site-packages (it needs the standard library only): it
# starts in a few milliseconds of CPU, which on a starved machine is the difference between samples
# from the first second and samples from the tenth
SAMPLER = [sys.executable, "-I", "-S", str(Path(__file__).with_name("headroom_sampler.py"))]

# ---- the rule (docs/performance.md "Harness headroom": figures at jobs 1-4 on 2 cores) ---------
# Any one figure past its threshold means the trial measured the harness's starvation, not the
# agent's repair. Calibrated with real episodes of slow-reads at time scale 0.1: alone and two side
# by side (true latencies: read peak p99 13-20 ms) reach none of them; three side by side (the healthy
# and oracle controls failing the 157 ms latency gate) pass two of them; four side by side, all three.
#
# The load generator's latencies count from each request's schedule, so its own start lag is added
# to every latency it records: 50 ms at p99 is half the 100 ms of absolute slack the standard
# outcome gate gives a p99 (docs/runner.md, Time scale). Seen: 4-17 ms at jobs 1-2, 69-85 ms at 3,
# 204-2284 ms at 4.
LOADGEN_P99_LAG_MS = 50.0
# The share of the window one of the episode's own processes was runnable but waited for a CPU
# (its cgroup's cpu.pressure "some"). An episode alone has its bursts (provisioning, snapshots, the
# services' peaks): 0.17-0.26. Seen: 0.32-0.33 at jobs 2, 0.58-0.60 at 3, 0.75-0.93 at 4.
CGROUP_PRESSURE_SHARE = 0.45
# an episode uses 0.54-0.77 cores alone or beside others (docs/performance.md); one whose own
# processes averaged more than a core was loaded by what ran in it, not by its neighbours
# (seen: the limits-off adversary, 1.24 cores, starving itself and the episode beside it)
OWN_LOAD_CORES = 1.0
# How late a sleeping process wakes at p99 is what a service's request handler waits before it
# runs; the same half of the gates' slack. The weakest of the three (the scheduler favours
# sleepers, so it grows last: 6-26 ms at jobs 1-2, 24-42 ms at 3, 30-65 ms at 4), it is the
# backstop where the others are missing (no cgroup, a trial that ended before the load started).
TIMER_P99_LATE_MS = 50.0
# how the reason of a starved trial begins (retry.py runs such a trial again under qualify)
OVERLOADED_PREFIX = "harness overloaded: "




# ---- reading the kernel's figures -------------------------------------------------------------
def cpu_ticks() -> tuple[list[int], int]:
    """The aggregate `cpu` line of /proc/stat (user nice system idle iowait irq softirq steal) and
    the number of CPUs it covers."""
    lines = PROC_STAT.read_text().splitlines()
    ticks = [int(v) for v in lines[0].split()[1:9]]
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return ticks, cpus


def pressure(path: Path) -> dict[str, dict[str, float]]:
    """A PSI file: {"some": {"avg10", "avg60", "avg300", "total"}, "full": {...}}."""
    figures = {}
    for line in path.read_text().splitlines():
        kind, *pairs = line.split()
        figures[kind] = {key: float(value) for key, value in (pair.split("=") for pair in pairs)}
    return figures


def _usage_usec(cgroup: Path) -> int:
    for line in (cgroup / "cpu.stat").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value)
    raise ValueError("cpu.stat has no usage_usec")


def _why(error: Exception) -> str:
    if isinstance(error, OSError):
        return f"{error.filename}: {error.strerror or error}"
    return f"{type(error).__name__}: {error}"


class _Readings:
    """One reading of every kernel source, at the probe's start or its end."""

    def __init__(self, cgroup: Path | None, missing: dict[str, str]) -> None:
        self.at = time.monotonic()
        self.ticks: tuple[list[int], int] | None = None
        self.psi: dict[str, dict[str, float]] | None = None
        self.usage: int | None = None
        self.cgroup_psi: dict[str, dict[str, float]] | None = None
        try:
            self.ticks = cpu_ticks()
        except (OSError, ValueError, IndexError) as error:
            missing["machine.stat"] = _why(error)
        try:
            self.psi = pressure(PROC_PRESSURE)
        except (OSError, ValueError) as error:  # no PSI: a kernel without CONFIG_PSI, or psi=0
            missing["machine.psi"] = _why(error)
        if cgroup is None:
            return
        try:
            self.usage = _usage_usec(cgroup)
        except (OSError, ValueError) as error:
            missing["cgroup"] = _why(error)
        try:
            self.cgroup_psi = pressure(cgroup / "cpu.pressure")
        except (OSError, ValueError) as error:
            missing["cgroup.pressure"] = _why(error)


def _share(start: float, end: float, window_us: float) -> float:
    return round(max(0.0, end - start) / window_us, 4) if window_us > 0 else 0.0


def percentile(values, q: float) -> float:
    """Nearest-rank percentile of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


# ---- the probe --------------------------------------------------------------------------------
class HeadroomProbe:
    def __init__(self, cgroup: Path | None) -> None:
        self.cgroup = cgroup
        self.missing: dict[str, str] = {}
        if cgroup is None:
            self.missing["cgroup"] = "the episode runs in no cgroup of its own"
        self.start_readings = _Readings(cgroup, self.missing)
        self.lateness_us = array("q")
        self.cgroup_rates: list[float] = []  # cores, once a second
        self.sampler: subprocess.Popen[bytes] | None = None
        self.reader: threading.Thread | None = None
        try:
            self.sampler = subprocess.Popen(SAMPLER + [f"{TIMER_INTERVAL_S:g}"], stdout=subprocess.PIPE,
                                            stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as error:
            self.missing["timer"] = f"the sampler did not start: {_why(error)}"
            return
        self.reader = threading.Thread(target=self._read, daemon=True, name="arenac-headroom")
        self.reader.start()

    @classmethod
    def start(cls, cgroup: Path | None = None) -> HeadroomProbe:
        return cls(cgroup)

    def _read(self) -> None:
        """Collect the sampler's lines and, about once a second, the cgroup's CPU use."""
        assert self.sampler is not None and self.sampler.stdout is not None
        last_at, last_usage = self.start_readings.at, self.start_readings.usage
        for line in self.sampler.stdout:
            try:
                self.lateness_us.append(int(line))
            except ValueError:
                continue
            now = time.monotonic()
            if last_usage is not None and self.cgroup is not None and now - last_at >= 1.0:
                try:
                    usage = _usage_usec(self.cgroup)
                except (OSError, ValueError):
                    continue
                self.cgroup_rates.append((usage - last_usage) / 1e6 / (now - last_at))
                last_at, last_usage = now, usage

    def stop(self, ledger: Path | None = None) -> Headroom:
        """End the sampler and put the figures together. Never raises: a source that fails is
        missing, and a failure of the probe itself is recorded as such (the episode's teardown
        comes after this)."""
        try:
            return self._stop(ledger)
        except Exception as error:  # the probe must never cost the episode its teardown
            if self.sampler is not None and self.sampler.poll() is None:
                self.sampler.kill()
            return Headroom(window_s=round(time.monotonic() - self.start_readings.at, 3),
                            machine=MachineFigures(cores=len(os.sched_getaffinity(0))),
                            missing={"probe": f"the probe failed: {_why(error)}"})

    def _stop(self, ledger: Path | None) -> Headroom:
        end = _Readings(self.cgroup, self.missing)
        if self.sampler is not None:
            if self.sampler.poll() is None:
                self.sampler.send_signal(signal.SIGTERM)
            try:
                self.sampler.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.sampler.kill()
                self.sampler.wait()
            if self.reader is not None:
                self.reader.join(timeout=5)
            if self.sampler.stdout is not None:
                self.sampler.stdout.close()
        start = self.start_readings
        window_s = max(1e-6, end.at - start.at)
        timer, loadgen = self._timer(), self._loadgen(ledger)
        machine, cgroup = self._machine(start, end, window_s), self._cgroup(start, end, window_s)
        headroom = Headroom(window_s=round(window_s, 3), timer=timer, loadgen=loadgen, machine=machine, cgroup=cgroup,
                            missing=dict(sorted(self.missing.items())))  # after the figures: they add to it
        return headroom.model_copy(update={"overloaded": overloaded(headroom)})

    def _timer(self) -> TimerFigures | None:
        samples = list(self.lateness_us)
        if not samples:
            self.missing.setdefault("timer", "the sampler reported nothing")
            return None
        ms = [max(0, s) / 1000 for s in samples]
        return TimerFigures(interval_ms=TIMER_INTERVAL_S * 1000, samples=len(ms),
                            p50_ms=round(percentile(ms, 50), 3), p99_ms=round(percentile(ms, 99), 3),
                            max_ms=round(max(ms), 3), late_ms=LATE_MS,
                            late_share=round(sum(1 for v in ms if v > LATE_MS) / len(ms), 4))

    def _loadgen(self, ledger: Path | None) -> LoadgenFigures | None:
        if ledger is None:
            self.missing["loadgen"] = "no ledger"
            return None
        try:
            lag = json.loads(ledger.read_text(encoding="utf-8")).get("start_lag")
        except (OSError, ValueError) as error:  # an episode that ended before the load started
            self.missing["loadgen"] = _why(error)
            return None
        if not isinstance(lag, dict) or not lag.get("starts"):
            self.missing["loadgen"] = "the ledger records no start lag"
            return None
        try:
            start_lag = StartLag.model_validate(lag)  # the ledger's own model (arenac/model/evidence.py)
        except ValueError as error:
            self.missing["loadgen"] = f"the ledger's start_lag is not readable: {_why(error)}"
            return None
        return LoadgenFigures(starts=start_lag.starts, p50_ms=round(start_lag.p50_s * 1000, 3),
                              p99_ms=round(start_lag.p99_s * 1000, 3), max_ms=round(start_lag.max_s * 1000, 3))

    def _machine(self, start: _Readings, end: _Readings, window_s: float) -> MachineFigures:
        figures: dict = {"cores": len(os.sched_getaffinity(0))}
        if start.ticks is not None and end.ticks is not None:
            delta = [b - a for a, b in zip(start.ticks[0], end.ticks[0], strict=True)]
            total = sum(delta)
            if total > 0:
                idle = delta[3] + delta[4]  # idle + iowait
                figures["busy_cores"] = round((total - idle) / total * end.ticks[1], 3)
                figures["steal_share"] = round(delta[7] / total, 4)
        if start.psi is not None and end.psi is not None:
            figures["psi_some_share"] = _share(start.psi["some"]["total"], end.psi["some"]["total"], window_s * 1e6)
            figures["psi_some_avg10"] = end.psi["some"]["avg10"]
        try:
            figures["loadavg_1m"] = float(PROC_LOADAVG.read_text().split()[0])
        except (OSError, ValueError, IndexError) as error:
            self.missing["machine.loadavg"] = _why(error)
        return MachineFigures(**figures)

    def _cgroup(self, start: _Readings, end: _Readings, window_s: float) -> CgroupFigures | None:
        if start.usage is None or end.usage is None:
            return None
        figures: dict = {"cpu_cores": round((end.usage - start.usage) / 1e6 / window_s, 3)}
        if self.cgroup_rates:
            figures["cpu_cores_p90"] = round(percentile(self.cgroup_rates, 90), 3)
        if start.cgroup_psi is not None and end.cgroup_psi is not None:
            window_us = window_s * 1e6
            figures["pressure_some_share"] = _share(start.cgroup_psi["some"]["total"],
                                                    end.cgroup_psi["some"]["total"], window_us)
            if "full" in start.cgroup_psi and "full" in end.cgroup_psi:
                figures["pressure_full_share"] = _share(start.cgroup_psi["full"]["total"],
                                                        end.cgroup_psi["full"]["total"], window_us)
        return CgroupFigures(**figures)


# ---- the rule ---------------------------------------------------------------------------------
def overloaded(headroom: Headroom) -> str | None:
    """`harness overloaded: ...` naming every figure past its threshold, or None."""
    reasons = []
    timer = headroom.timer
    if timer is not None and timer.samples >= MIN_TIMER_SAMPLES and timer.p99_ms > TIMER_P99_LATE_MS:
        reasons.append(f"timer p99 lateness {timer.p99_ms:.0f} ms > {TIMER_P99_LATE_MS:g} ms")
    loadgen = headroom.loadgen
    if loadgen is not None and loadgen.p99_ms > LOADGEN_P99_LAG_MS:
        reasons.append(f"load generator p99 start lag {loadgen.p99_ms:.0f} ms > {LOADGEN_P99_LAG_MS:g} ms")
    cgroup = headroom.cgroup
    if cgroup is not None and cgroup.pressure_some_share is not None \
            and cgroup.pressure_some_share > CGROUP_PRESSURE_SHARE:
        reasons.append(f"the episode's processes waited for a CPU {cgroup.pressure_some_share:.0%} of the time "
                       f"> {CGROUP_PRESSURE_SHARE:.0%}")
    return OVERLOADED_PREFIX + "; ".join(reasons) if reasons else None


def summary(headroom: Headroom) -> TimelineHeadroom:
    """The figures the timeline carries (`headroom` in timeline.json)."""
    return TimelineHeadroom(
        overloaded=headroom.overloaded is not None,
        timer_p99_ms=headroom.timer.p99_ms if headroom.timer else None,
        loadgen_p99_start_lag_ms=headroom.loadgen.p99_ms if headroom.loadgen else None,
        episode_cpu_cores=headroom.cgroup.cpu_cores if headroom.cgroup else None,
        episode_pressure_share=headroom.cgroup.pressure_some_share if headroom.cgroup else None,
        machine_psi_share=headroom.machine.psi_some_share)


def apply(timeline: Timeline, headroom: Headroom) -> Timeline:
    """The timeline with the summary recorded and, when the harness was starved, a scored or failed
    trial turned into infra_error with the reason. A void or infra_error trial keeps its status
    and reason: a void one was never measured, an infra_error one already failed."""
    short = summary(headroom)
    if headroom.overloaded is None or timeline.status not in ("scored", "failed"):
        return timeline.model_copy(update={"headroom": short})
    if own_load(headroom):
        # the episode's own processes took the machine: what the agent set the substrate to do
        # (an attack that lifts every limit, say) starved its harness. Voiding that trial would let
        # an agent trade a failure for a retry, so it stays scored; the timeline says so.
        return timeline.model_copy(update={"headroom": short.model_copy(update={"own_load": True})})
    return timeline.model_copy(update={"headroom": short}).ended("infra_error", headroom.overloaded)


def own_load(headroom: Headroom) -> bool:
    """The episode's own cgroup used more than `OWN_LOAD_CORES` on average."""
    cgroup = headroom.cgroup
    return cgroup is not None and cgroup.cpu_cores > OWN_LOAD_CORES
