"""How many episodes this machine holds now: the short calibration before a qualification.

Contract:
- `measure_capacity(out)` samples the machine's busy time for about a second and divides the room
  left (cores x MAX_BUSY_SHARE - cores busy now) by the CPU one episode uses: the median of earlier
  episodes under `out` that had headroom (their evidence/headroom.json), else EPISODE_CORES.
- `jobs_warning(jobs, capacity)` is the one line qualify prints when `--jobs` exceeds that. It
  never refuses: the overload rule (headroom.py) turns a starved trial into infra_error anyway.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from arenac.model.headroom import Headroom
from arenac.runner.headroom import PROC_PRESSURE, cpu_ticks, percentile, pressure

CALIBRATE_S = 1.0  # how long qualify samples the machine's busy time before it starts
# the CPU one episode uses on average (its cgroup's usage over the window), when --out holds no
# earlier episode that had headroom: 0.67-0.78 cores alone on the reference machine
EPISODE_CORES = 0.75
# the share of the machine's cores that episodes may keep busy between them: latency is queueing,
# and queues grow without bound as a CPU nears full use. Two episodes side by side kept the
# reference machine 68 % busy and measured true latencies; three kept it 88 % busy and failed the
# latency gates of healthy controls. (Episodes bunch their CPU into bursts: 1.0-1.5 cores in their
# busiest seconds, so an average below the cores is not enough.)
MAX_BUSY_SHARE = 0.8


class Capacity(BaseModel):
    """The calibration before qualification (printed, never written)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cores: int  # CPUs this process may run on
    busy_cores: float | None  # CPUs busy now (over CALIBRATE_S), whoever uses them
    psi_some_avg10: float | None  # the machine's CPU pressure now, percent
    episode_cores: float  # the CPU one episode uses on average
    episode_cores_from: str  # where that figure comes from
    fits: int  # episodes the machine holds now


def _recorded_episode_cores(out: Path) -> tuple[float, int] | None:
    """The median CPU (cores) of earlier episodes under `out` that were not overloaded (a starved
    episode used less than it needed), and how many there were."""
    figures = []
    for path in sorted(out.glob("**/evidence/headroom.json")) if out.is_dir() else []:
        try:
            headroom = Headroom.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if headroom.overloaded is None and headroom.cgroup is not None and headroom.cgroup.cpu_cores > 0:
            figures.append(headroom.cgroup.cpu_cores)
    return (percentile(figures, 50), len(figures)) if figures else None


def measure_capacity(out: Path | None = None, sample_s: float = CALIBRATE_S) -> Capacity:
    """How many episodes fit now: (cores x MAX_BUSY_SHARE - cores busy now) / an episode's CPU."""
    cores = len(os.sched_getaffinity(0))
    busy = psi = None
    try:
        before, cpus = cpu_ticks()
        time.sleep(sample_s)
        after, _ = cpu_ticks()
        delta = [b - a for a, b in zip(before, after, strict=True)]
        if sum(delta) > 0:
            busy = round((sum(delta) - delta[3] - delta[4]) / sum(delta) * cpus, 2)
    except (OSError, ValueError, IndexError):
        pass
    try:
        psi = pressure(PROC_PRESSURE)["some"]["avg10"]
    except (OSError, ValueError, KeyError):
        pass
    recorded = _recorded_episode_cores(out) if out is not None else None
    if recorded is not None:
        episode_cores, how_many = recorded
        source = f"{how_many} earlier episode(s) in {out}"
    else:
        episode_cores, source = EPISODE_CORES, "the documented default"
    room = max(0.0, cores * MAX_BUSY_SHARE - (busy or 0.0))
    return Capacity(cores=cores, busy_cores=busy, psi_some_avg10=psi, episode_cores=round(episode_cores, 3),
                    episode_cores_from=source, fits=int(room / max(episode_cores, 0.01)))


def jobs_warning(jobs: int, capacity: Capacity) -> str | None:
    """One line when `jobs` episodes side by side exceed what the machine holds, else None."""
    if jobs <= capacity.fits:
        return None
    busy = f", {capacity.busy_cores:g} busy now" if capacity.busy_cores is not None else ""
    psi = f", CPU pressure {capacity.psi_some_avg10:g}%" if capacity.psi_some_avg10 is not None else ""
    return (f"arenac: warning: --jobs {jobs} exceeds what this machine holds now ({capacity.fits}): "
            f"{capacity.cores} core(s){busy}{psi}, episodes may keep {MAX_BUSY_SHARE:.0%} of them busy, one uses "
            f"~{capacity.episode_cores:g} cores ({capacity.episode_cores_from}); starved episodes end as "
            "infra_error (harness overloaded)")
