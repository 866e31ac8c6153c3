"""Running a trial again when it measured the machine, not the agent.

A trial whose harness was starved (headroom.py: the timer, the load generator or the episode's own
processes waited past their thresholds) is an infra_error `harness overloaded: ...`: its latencies
are the machine's, so it says nothing about the agent or the variant. On a shared machine that
happens now and then even to an episode alone; an orchestrator that runs many trials (qualify) runs
such a trial again rather than failing a variant on it.

Contract:
- `overloaded(result)`: the result is an infra_error whose reason is the harness's starvation.
  Nothing else is retried: every other infra_error, every void (a fault that did not show: void
  advice says what to move) and every scored or failed trial stands, as a retry would hide it.
- `run_retrying(launch, bundle, options, stop, retries, first=None) -> Attempts` runs the episode
  (or takes `first`, a result already recorded in `options.out`); while the result is overloaded,
  retries are left and `stop` is not set, it moves that attempt's run directory aside to
  `<run dir>.overloaded-N` (the first N not taken: kept, as its evidence shows the starvation, and
  never read as the run) and runs the episode again in the run directory. `Attempts.result` is the
  last result, `Attempts.earlier` the attempts set aside, oldest first. A campaign passes its own
  policy: `retryable=infra_error` (every infra_error but an interrupted one) and `label`
  `infra-error`, so its attempts go to `<run dir>.infra-error-N`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arenac.runner.bundle import RunnableBundle
from arenac.runner.headroom import OVERLOADED_PREFIX
from arenac.runner.options import EpisodeOptions, EpisodeResult

Launch = Callable[[RunnableBundle, EpisodeOptions, threading.Event], EpisodeResult]


@dataclass(frozen=True)
class SetAside:
    """An overloaded attempt: where its run directory went, and the reason it was not the run."""

    run_dir: Path
    reason: str


@dataclass(frozen=True)
class Attempts:
    result: EpisodeResult
    earlier: tuple[SetAside, ...] = ()


def overloaded(result: EpisodeResult) -> bool:
    return result.status == "infra_error" and result.reason.startswith(OVERLOADED_PREFIX)


def infra_error(result: EpisodeResult) -> bool:
    """Any infra_error but an interrupted one: what a campaign's retry policy runs again (its
    trials measure agents, and an infrastructure failure says nothing of the agent)."""
    return result.status == "infra_error" and result.reason != "interrupted"


def run_retrying(launch: Launch, bundle: RunnableBundle, options: EpisodeOptions, stop: threading.Event,
                 retries: int, first: EpisodeResult | None = None,
                 retryable: Callable[[EpisodeResult], bool] = overloaded, label: str = "overloaded") -> Attempts:
    result = first if first is not None else launch(bundle, options, stop)
    earlier: list[SetAside] = []
    while retryable(result) and len(earlier) < retries and not stop.is_set():
        aside = free_name(options.out, label)
        options.out.rename(aside)  # an overloaded trial ran its harness: its run directory exists
        earlier.append(SetAside(aside, result.reason))
        result = launch(bundle, options, stop)
    return Attempts(result, tuple(earlier))


def free_name(run_dir: Path, label: str = "overloaded") -> Path:
    """`<run dir>.<label>-N`, the first N not taken."""
    n = 1
    while (candidate := run_dir.with_name(f"{run_dir.name}.{label}-{n}")).exists():
        n += 1
    return candidate
