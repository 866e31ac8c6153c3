"""A trial's namespace names and labels (arenac/runner/kube/names.py): deterministic, valid DNS-1123
labels of at most 63 characters, distinct for distinct trial ids; a trial id that cannot be a
label value is refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenac.runner.kube.api import KubeError
from arenac.runner.kube.names import labels, trial_namespaces

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
TRIAL_IDS = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", fullmatch=True)


def test_a_plain_trial_id_is_the_namespaces_middle() -> None:
    names = trial_namespaces("t-0042")
    assert (names.application, names.harness) == ("arenac-t-0042-app", "arenac-t-0042-harness")
    assert trial_namespaces("t-0042") == names


def test_an_id_that_is_not_a_plain_slug_gets_a_digest() -> None:
    names = trial_namespaces("Run_1.a")
    assert re.fullmatch(r"arenac-run-1-a-[0-9a-f]{8}-app", names.application)
    assert trial_namespaces("run-1-a").application == "arenac-run-1-a-app"  # reads alike, another namespace
    longest = trial_namespaces("x" * 63)
    assert len(longest.harness) <= 63 and longest.harness.endswith("-harness")


@given(TRIAL_IDS)
def test_every_label_value_makes_valid_distinct_namespaces(trial: str) -> None:
    names = trial_namespaces(trial)
    for name in (names.application, names.harness):
        assert DNS_LABEL.match(name) and len(name) <= 63
    assert names.application != names.harness


@given(TRIAL_IDS, TRIAL_IDS)
def test_two_trial_ids_never_share_a_namespace(first: str, second: str) -> None:
    if first != second:
        assert trial_namespaces(first).application != trial_namespaces(second).application


@pytest.mark.parametrize("trial", ["", "-x", "x-", "a b", "ü", "x\n", "x" * 64])
def test_a_trial_id_that_is_no_label_value_is_refused(trial: str) -> None:
    with pytest.raises(KubeError, match="not a Kubernetes label value"):
        trial_namespaces(trial)


def test_the_labels() -> None:
    assert labels("t1", "harness") == {"app.kubernetes.io/managed-by": "arenac", "arenac.dev/trial": "t1",
                                       "arenac.dev/role": "harness"}
