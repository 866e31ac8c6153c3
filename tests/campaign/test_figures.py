"""From trials to figures (arenac/campaign/stats.py): agent estimates averaged over tasks, the
breakdowns, and the void and infra_error trials excluded from each and counted."""

from __future__ import annotations

from typing import Literal

import pytest

from arenac.campaign.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Dimension,
    Excluded,
    agent_estimate,
    breakdown,
    group_figures,
    summarize,
    task_bootstrap,
)
from arenac.campaign.trials import Trial
from arenac.model.evidence import TrialStatus


def trial(task: str, status: TrialStatus = "scored", reward: Literal[0, 1] = 0, *, agent: str = "a",
          faults: dict[str, str] | None = None, access: str = "scoped_kubectl", substrate: str = "spine") -> Trial:
    return Trial(agent=agent, task=task, variant=f"{task}-00000000", faults=faults or {"f": "config"},
                 access=access, substrate=substrate, status=status, reward=reward)


# task x: 1 pass of 1; task y: 0 of 3, one void and one infra_error beside them
TRIALS = [trial("x", reward=1), trial("y"), trial("y"), trial("y", "failed"), trial("y", "void"),
          trial("y", "infra_error")]


def test_pass_at_1_is_the_mean_of_the_task_rates_not_the_pooled_rate() -> None:
    estimate = agent_estimate(TRIALS, "a")
    assert estimate.value == pytest.approx(0.5)  # (1/1 + 0/3) / 2; pooled it would be 1/4
    assert estimate.tasks == 2
    assert estimate.interval == task_bootstrap([1.0, 0.0])
    assert (estimate.resamples, estimate.seed) == (DEFAULT_RESAMPLES, DEFAULT_SEED)
    assert estimate.excluded == Excluded(void=1, infra_error=1)


def test_a_failed_trial_counts_as_a_scored_failure() -> None:
    figures = group_figures("y", [trial("y", "failed"), trial("y", reward=1)])
    assert (figures.scored, figures.passes, figures.pass_rate) == (2, 1, 0.5)
    assert figures.excluded == Excluded()


def test_void_and_infra_error_are_excluded_from_the_rate_and_counted() -> None:
    figures = group_figures("y", [trial("y", reward=1), trial("y", "void"), trial("y", "void"),
                                  trial("y", "infra_error")])
    assert (figures.scored, figures.passes, figures.pass_rate) == (1, 1, 1.0)
    assert figures.excluded == Excluded(void=2, infra_error=1)
    assert figures.excluded.total == 3


def test_a_group_of_excluded_trials_says_no_scored_trials() -> None:
    figures = group_figures("z", [trial("z", "void"), trial("z", "infra_error")])
    assert (figures.scored, figures.pass_rate, figures.wilson) == (0, None, None)
    assert figures.excluded.total == 2


def test_a_task_with_no_scored_trial_is_named_and_left_out_of_the_mean() -> None:
    estimate = agent_estimate([trial("x", reward=1), trial("z", "void")], "a")
    assert (estimate.value, estimate.tasks, estimate.unscored_tasks) == (1.0, 1, ("z",))
    assert estimate.interval is not None and (estimate.interval.low, estimate.interval.high) == (1.0, 1.0)


def test_an_agent_without_scored_trials_has_no_figure() -> None:
    estimate = agent_estimate([trial("z", "void")], "a")
    assert (estimate.value, estimate.interval, estimate.tasks) == (None, None, 0)
    assert estimate.excluded == Excluded(void=1)
    nobody = agent_estimate(TRIALS, "b")  # no trials at all: nothing excluded either
    assert (nobody.value, nobody.excluded) == (None, Excluded())


def test_one_task_all_passing() -> None:
    estimate = agent_estimate([trial("x", reward=1)] * 3, "a", "pass^k", 3)
    assert estimate.value == 1.0
    assert estimate.interval is not None and (estimate.interval.low, estimate.interval.high) == (1.0, 1.0)


def test_pass_at_k_averages_the_per_task_estimates() -> None:
    trials = [trial("x", reward=1), trial("x"), trial("x"), trial("y", reward=1), trial("y", reward=1), trial("y")]
    at_2 = agent_estimate(trials, "a", "pass@k", 2)
    hat_2 = agent_estimate(trials, "a", "pass^k", 2)
    assert at_2.value == pytest.approx((2 / 3 + 1) / 2)  # x: 1 - C(2,2)/C(3,2); y: every pair holds a pass
    assert hat_2.value == pytest.approx((0 + 1 / 3) / 2)  # x: no pair of passes; y: C(2,2)/C(3,2)


def test_a_task_short_of_k_scored_trials_leaves_pass_at_k_undefined() -> None:
    trials = [trial("x", reward=1)] * 3 + [trial("y", reward=1), trial("y", "void")]
    estimate = agent_estimate(trials, "a", "pass@k", 2)
    assert (estimate.value, estimate.interval) == (None, None)
    assert [(short.task, short.scored) for short in estimate.short_tasks] == [("y", 1)]
    assert agent_estimate(trials, "a", "pass@k", 1).value == 1.0  # k=1 is defined for both tasks
    with pytest.raises(ValueError, match="k must be at least 1"):
        agent_estimate(trials, "a", "pass@k", 0)


def test_a_trial_counts_in_every_layer_of_its_faults_once() -> None:
    trials = [trial("x", reward=1, faults={"pool": "config", "disk": "runtime", "cache": "runtime"}),
              trial("x", faults={"pool": "image"}), trial("x", "void", faults={"pool": "runtime"})]
    groups = {group.key: group for group in breakdown(trials, "layer").groups}
    assert list(groups) == ["config", "image", "runtime"]
    assert (groups["config"].scored, groups["config"].passes) == (1, 1)
    assert (groups["image"].scored, groups["image"].passes) == (1, 0)
    assert (groups["runtime"].scored, groups["runtime"].passes, groups["runtime"].excluded.void) == (1, 1, 1)


@pytest.mark.parametrize(("by", "keys"), [("agent", ["a", "b"]), ("task", ["x", "y"]),
                                          ("access", ["exec", "scoped_kubectl"]), ("substrate", ["other", "spine"])])
def test_breakdowns_group_by_their_dimension_sorted(by: Dimension, keys: list[str]) -> None:
    trials = [trial("y", agent="b", access="exec", substrate="other", reward=1), trial("x")]
    result = breakdown(trials, by)
    assert [group.key for group in result.groups] == keys
    assert sum(group.scored for group in result.groups) == 2


def test_the_summary_carries_every_figure_and_every_exclusion() -> None:
    trials = TRIALS + [trial("x", agent="b", reward=1), trial("x", "void", agent="b")]
    summary = summarize(trials, ks=(1,), resamples=200)
    assert [group.key for group in summary.leaderboard.groups] == ["a", "b"]
    assert summary.excluded == Excluded(void=2, infra_error=1)
    a, b = summary.agents
    assert (a.agent, a.pass_at_1.value, b.agent, b.pass_at_1.value) == ("a", 0.5, "b", 1.0)
    assert [(e.estimator, e.k) for e in a.estimates] == [("pass@k", 1), ("pass^k", 1)]
    assert [breakdown.dimension for breakdown in a.breakdowns] == ["task", "layer", "access", "substrate"]
    assert b.pass_at_1.excluded == Excluded(void=1)
    assert summarize(trials, ks=(1,), resamples=200) == summary  # deterministic
    with pytest.raises(ValueError, match=r"every k must be at least 1, not \[0, 2\]"):
        summarize([], ks=(2, 0))
