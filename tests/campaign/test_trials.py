"""The trial row (arenac/campaign/trials.py): what counts as scored, its layers, and the rows it
refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from arenac.campaign.trials import Trial

ROW = {"agent": "oracle", "task": "minimal", "variant": "minimal-729bb3c5", "faults": {"pool": "config"},
       "access": "scoped_kubectl", "substrate": "spine", "status": "scored", "reward": 1}


@pytest.mark.parametrize(("status", "scored"), [("scored", True), ("failed", True), ("void", False),
                                                ("infra_error", False)])
def test_scored_and_failed_count_void_and_infra_error_do_not(status: str, scored: bool) -> None:
    assert Trial.model_validate(ROW | {"status": status, "reward": 0}).scored is scored


def test_a_trial_has_each_distinct_layer_of_its_faults_once() -> None:
    trial = Trial.model_validate(ROW | {"faults": {"pool": "runtime", "disk": "config", "cache": "runtime"}})
    assert trial.layers == ("config", "runtime")


@pytest.mark.parametrize("status", ["failed", "void", "infra_error"])
def test_reward_1_on_an_unscored_or_failed_trial_is_refused(status: str) -> None:
    with pytest.raises(ValidationError, match=f"a {status} trial has reward 0"):
        Trial.model_validate(ROW | {"status": status})
    assert Trial.model_validate(ROW | {"status": status, "reward": 0}).passed is False


@pytest.mark.parametrize("change", [{"faults": {}}, {"status": "passed"}, {"reward": 2}, {"attempt": 1}])
def test_malformed_rows_are_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Trial.model_validate(ROW | change)
    assert Trial.model_validate(ROW).passed  # the row without the change is good
