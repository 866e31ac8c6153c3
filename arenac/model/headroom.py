"""headroom.json (docs/evidence.md): what the harness had of the machine during an episode, from
provisioning to the end of the challenges. Measured and written by arenac/runner/headroom.py, which
also judges it (`overloaded`); `TimelineHeadroom` (arenac/model/evidence.py) is its summary in the
timeline. Not read by the verifier: an overloaded trial is not scored at all. A source the machine
lacks is None here and named in `missing` with the reason. Shares are fractions of the window
(0..1), times real milliseconds.
"""

from __future__ import annotations

from pydantic import Field

from arenac.model.evidence import EvidenceModel


class TimerFigures(EvidenceModel):
    """How late the sampler woke from its `interval_ms` sleeps."""

    interval_ms: float
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    late_ms: float  # the threshold of late_share
    late_share: float  # share of wake-ups later than late_ms


class LoadgenFigures(EvidenceModel):
    """How late the load generator started its requests (its latencies count from the schedule)."""

    starts: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class MachineFigures(EvidenceModel):
    cores: int  # CPUs this process may run on (sched_getaffinity)
    busy_cores: float | None = None  # CPUs busy on average over the window, whoever used them
    steal_share: float | None = None  # share of CPU time the hypervisor took (steal)
    psi_some_share: float | None = None  # share of the window some task waited for a CPU
    psi_some_avg10: float | None = None  # the kernel's 10 s average of that (percent) at the end
    loadavg_1m: float | None = None  # at the end


class CgroupFigures(EvidenceModel):
    """The episode's own processes (its cgroup)."""

    cpu_cores: float  # CPU used over the window, in cores
    cpu_cores_p90: float | None = None  # its busiest seconds (90th percentile of 1 s samples)
    pressure_some_share: float | None = None  # share of the window one of them waited for a CPU
    pressure_full_share: float | None = None  # share of the window all of them did


class Headroom(EvidenceModel):
    window_s: float  # real seconds the probe ran
    timer: TimerFigures | None = None
    loadgen: LoadgenFigures | None = None
    machine: MachineFigures
    cgroup: CgroupFigures | None = None
    missing: dict[str, str] = Field(default_factory=dict)  # source -> why it is not measured here
    overloaded: str | None = None  # the reason, when the harness was starved (overloaded())
