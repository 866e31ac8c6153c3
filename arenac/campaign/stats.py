"""The campaign statistics: pure functions from trials (campaign/trials.py) to figures with intervals.

Contract (the definitions and formulas: docs/statistics.md):
- Only scored trials (status scored or failed) count; void and infra_error trials are excluded from
  every figure and counted: every group, every agent estimate and the summary carry an `Excluded`.
- `wilson(passes, n)`: the Wilson score interval of a pass rate (per task, or per any group).
- `pass_at_k(n, c, k)`: the unbiased pass@k estimator of Chen et al. (2021), 1 - C(n-c, k)/C(n, k),
  in its numerically stable product form; `pass_hat_k(n, c, k)`: the unbiased pass^k estimator
  C(c, k)/C(n, k), the chance that k trials drawn without replacement all pass. Both need n >= k
  and raise `EstimateUndefined` otherwise.
- `agent_estimate`: an agent's figure is the mean over tasks of the per-task estimate (pass@1: of
  the per-task pass rate), with a percentile interval by bootstrap over tasks (tasks resampled
  with replacement, as the field does). A task with no scored trial is left out of the mean and
  named (`unscored_tasks`); a task with fewer than k scored trials makes pass@k and pass^k
  undefined (value None, the task named in `short_tasks`) rather than biased by dropping it.
- `breakdown`: per agent, task, fault layer (a trial counts once in each distinct layer of its
  faults), access profile or substrate: trials scored, passes, pass rate and Wilson interval.
  A group with no scored trial says so (pass_rate and wilson None), never divides by zero.
- `given_full_fix`: per agent, the same figures over its scored trials that made a full fix
  (`Trial.full_fix` True: the agent changed every target of the oracle's repair): the pass rate
  given a full fix. Every agent has a group, with no scored trial when it never made one.
- Deterministic: the bootstrap draws from `random.Random(seed)`, seed and resample count are
  parameters; groups are sorted by key. Same trials, same arguments, same figures.

Dependencies: the standard library only (`statistics.NormalDist` for the normal quantile,
`random.Random` for the resampling). Each estimator is a few lines of closed-form math, tested
against brute force and reference values (tests/campaign/); numpy or scipy would add a heavy
dependency to the harness for less than that.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from statistics import NormalDist
from typing import Literal

from arenac.campaign.trials import Trial
from arenac.model.base import Model

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0

Dimension = Literal["agent", "task", "layer", "access", "substrate"]
Estimator = Literal["pass@k", "pass^k"]
ESTIMATORS: tuple[Estimator, ...] = ("pass@k", "pass^k")
AGENT_BREAKDOWNS: tuple[Dimension, ...] = ("task", "layer", "access", "substrate")


class EstimateUndefined(ValueError):
    """An estimate asked for outside its domain (fewer scored trials than k, none at all)."""


class Interval(Model):
    low: float
    high: float
    confidence: float


class Excluded(Model):
    """The trials a figure leaves out, by status: never dropped silently."""

    void: int = 0
    infra_error: int = 0

    @property
    def total(self) -> int:
        return self.void + self.infra_error


class GroupFigures(Model):
    """One group's figures (a task, a layer, ...). pass_rate and wilson are None when the group
    has no scored trial: "no scored trials", not a rate of zero."""

    key: str
    scored: int
    passes: int
    pass_rate: float | None
    wilson: Interval | None
    excluded: Excluded


class Breakdown(Model):
    dimension: Dimension
    groups: tuple[GroupFigures, ...]  # sorted by key


class TaskCounts(Model):
    """One agent's scored trials and passes on one task: an estimator's n and c."""

    task: str
    scored: int
    passes: int


class AgentEstimate(Model):
    """An agent's pass@k or pass^k: the mean over tasks of the per-task estimate, with its
    task-bootstrap interval. value and interval are None when no task has a scored trial or some
    task has fewer than k (named in short_tasks)."""

    agent: str
    estimator: Estimator
    k: int
    value: float | None
    interval: Interval | None
    tasks: int  # the tasks averaged: those with a scored trial (the bootstrap's units)
    unscored_tasks: tuple[str, ...]  # tasks whose every trial was excluded
    short_tasks: tuple[TaskCounts, ...]  # tasks with fewer than k scored trials
    resamples: int
    seed: int
    excluded: Excluded


class AgentSummary(Model):
    agent: str
    pass_at_1: AgentEstimate
    estimates: tuple[AgentEstimate, ...]  # pass@k then pass^k, for each k asked
    breakdowns: tuple[Breakdown, ...]  # per task, layer, access profile, substrate


class CampaignSummary(Model):
    leaderboard: Breakdown  # per agent, pooled over its scored trials
    given_full_fix: Breakdown  # per agent, pooled over its scored trials that made a full fix
    agents: tuple[AgentSummary, ...]  # sorted by agent
    excluded: Excluded  # over the whole campaign


# ---- estimators -------------------------------------------------------------------------------
def _check_counts(n: int, c: int, k: int, name: str) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"{name}: passes must be between 0 and the trials scored, not c={c} of n={n}")
    if k < 1:
        raise ValueError(f"{name}: k must be at least 1, not {k}")
    if n < k:
        raise EstimateUndefined(f"{name} needs at least k={k} scored trials, not n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that at least one of k trials passes, from c passes in n: 1 - C(n-c, k)
    / C(n, k), as the product 1 - prod_{i=n-c+1..n} (1 - k/i), which never forms the binomials."""
    _check_counts(n, c, k, f"pass@{k}")
    if n - c < k:  # every k-subset holds a pass
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that all of k trials pass, from c passes in n: C(c, k) / C(n, k), as the
    product prod_{i=0..k-1} (c-i)/(n-i)."""
    _check_counts(n, c, k, f"pass^{k}")
    if c < k:  # no k-subset is all passes
        return 0.0
    return math.prod((c - i) / (n - i) for i in range(k))


_ESTIMATORS: dict[Estimator, Callable[[int, int, int], float]] = {"pass@k": pass_at_k, "pass^k": pass_hat_k}


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(passes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The Wilson score interval of the pass rate passes/n (Wilson 1927; Newcombe 1998, method 3)."""
    if n == 0:
        raise EstimateUndefined("a Wilson interval needs scored trials: there are none")
    if n < 0 or not 0 <= passes <= n:
        raise ValueError(f"passes must be between 0 and the trials scored, not {passes} of {n}")
    z = _z(confidence)
    rate, z2 = passes / n, z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    # at 0 (or n) passes the bound is exactly 0 (or 1); rounding must not move it past the rate
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == n else min(1.0, centre + half)
    return Interval(low=low, high=high, confidence=confidence)


def _mean(values: Sequence[float]) -> float:
    # clamped: the division may round past the values' range (three 0.2s make 0.20000000000000004)
    return min(max(math.fsum(values) / len(values), min(values)), max(values))


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between order statistics."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def task_bootstrap(values: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The percentile bootstrap interval of the mean of per-task values: `resamples` times, draw as
    many tasks as there are, with replacement, and take the mean; the interval is the central
    `confidence` share of those means."""
    if not values:
        raise EstimateUndefined("a task bootstrap needs at least one task with scored trials")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    _z(confidence)  # refuses a confidence outside (0, 1)
    draw = random.Random(seed)
    means = sorted(_mean(draw.choices(values, k=len(values))) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return Interval(low=_quantile(means, tail), high=_quantile(means, 1 - tail), confidence=confidence)


# ---- trials -> figures --------------------------------------------------------------------------
def excluded_counts(trials: Iterable[Trial]) -> Excluded:
    statuses = [trial.status for trial in trials]
    return Excluded(void=statuses.count("void"), infra_error=statuses.count("infra_error"))


def task_counts(trials: Iterable[Trial]) -> tuple[TaskCounts, ...]:
    """Scored trials and passes per task (sorted by task), a task with none scored included."""
    counts: dict[str, tuple[int, int]] = {}
    for trial in trials:
        scored, passes = counts.get(trial.task, (0, 0))
        counts[trial.task] = (scored + trial.scored, passes + (trial.scored and trial.passed))
    return tuple(TaskCounts(task=task, scored=scored, passes=passes)
                 for task, (scored, passes) in sorted(counts.items()))


def agent_estimate(trials: Sequence[Trial], agent: str, estimator: Estimator = "pass@k", k: int = 1, *,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE) -> AgentEstimate:
    """`agent`'s pass@k or pass^k over its trials among `trials`: the mean over tasks of the
    per-task estimate, with a task-bootstrap interval (pass@1, the default: the mean of the
    per-task pass rates)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    mine = [trial for trial in trials if trial.agent == agent]
    counts = task_counts(mine)
    measured = [count for count in counts if count.scored > 0]
    short = tuple(count for count in measured if count.scored < k)
    value = interval = None
    if measured and not short:
        per_task = [_ESTIMATORS[estimator](count.scored, count.passes, k) for count in measured]
        value = _mean(per_task)
        interval = task_bootstrap(per_task, resamples=resamples, seed=seed, confidence=confidence)
    return AgentEstimate(agent=agent, estimator=estimator, k=k, value=value, interval=interval,
                         tasks=len(measured), unscored_tasks=tuple(c.task for c in counts if c.scored == 0),
                         short_tasks=short, resamples=resamples, seed=seed, excluded=excluded_counts(mine))


def group_figures(key: str, trials: Sequence[Trial], confidence: float = DEFAULT_CONFIDENCE) -> GroupFigures:
    """A group's scored trials, passes, pass rate and Wilson interval, and what it excluded."""
    scored = [trial for trial in trials if trial.scored]
    passes = sum(trial.passed for trial in scored)
    rate = passes / len(scored) if scored else None
    interval = wilson(passes, len(scored), confidence) if scored else None
    return GroupFigures(key=key, scored=len(scored), passes=passes, pass_rate=rate, wilson=interval,
                        excluded=excluded_counts(trials))


_GROUP_KEYS: dict[Dimension, Callable[[Trial], tuple[str, ...]]] = {
    "agent": lambda trial: (trial.agent,),
    "task": lambda trial: (trial.task,),
    "layer": lambda trial: trial.layers,  # once in each distinct layer of its faults
    "access": lambda trial: (trial.access,),
    "substrate": lambda trial: (trial.substrate,),
}


def breakdown(trials: Iterable[Trial], by: Dimension, confidence: float = DEFAULT_CONFIDENCE) -> Breakdown:
    """The trials grouped `by` one dimension, each group's figures, sorted by key."""
    members: dict[str, list[Trial]] = {}
    for trial in trials:
        for key in _GROUP_KEYS[by](trial):
            members.setdefault(key, []).append(trial)
    return Breakdown(dimension=by, groups=tuple(group_figures(key, members[key], confidence)
                                                for key in sorted(members)))


def given_full_fix(trials: Sequence[Trial], confidence: float = DEFAULT_CONFIDENCE) -> Breakdown:
    """Per agent (every agent of `trials`, sorted), the figures of its trials that made a full fix."""
    agents = sorted({trial.agent for trial in trials})
    return Breakdown(dimension="agent", groups=tuple(
        group_figures(agent, [t for t in trials if t.agent == agent and t.full_fix is True], confidence)
        for agent in agents))


def summarize(trials: Sequence[Trial], ks: Sequence[int] = (), *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> CampaignSummary:
    """The campaign's figures: the leaderboard (per agent, pooled), the pass rate given a full fix
    (per agent), and per agent its pass@1, its
    pass@k and pass^k for each k in `ks`, and its breakdowns per task, layer, access and substrate."""
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be at least 1, not {sorted(ks)}")

    def estimate(agent: str, estimator: Estimator, k: int) -> AgentEstimate:
        return agent_estimate(trials, agent, estimator, k, resamples=resamples, seed=seed, confidence=confidence)

    def agent_summary(agent: str) -> AgentSummary:
        mine = [trial for trial in trials if trial.agent == agent]
        return AgentSummary(
            agent=agent, pass_at_1=estimate(agent, "pass@k", 1),
            estimates=tuple(estimate(agent, estimator, k) for k in ks for estimator in ESTIMATORS),
            breakdowns=tuple(breakdown(mine, by, confidence) for by in AGENT_BREAKDOWNS))

    return CampaignSummary(leaderboard=breakdown(trials, "agent", confidence),
                           given_full_fix=given_full_fix(trials, confidence),
                           agents=tuple(agent_summary(agent) for agent in sorted({t.agent for t in trials})),
                           excluded=excluded_counts(trials))
