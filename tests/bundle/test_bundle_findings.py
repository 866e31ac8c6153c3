"""`BundleCheck.findings()`, the one wording of a bundle check: empty for an intact bundle, one line
per difference otherwise (the manifest's own problem, then altered, mode changed, missing, not in
manifest), the lines `arenac verify-bundle` prints and the runner's refusal joins."""

from __future__ import annotations

import shutil

import pytest

from arenac.bundle import BundleCheck, verify_bundle
from helpers.golden import complete_variant

GOLDEN = complete_variant("minimal")  # the golden bundle with its vendored chart files restored


@pytest.fixture
def bundle(tmp_path):
    copy = tmp_path / GOLDEN.name
    shutil.copytree(GOLDEN, copy)
    return copy


def test_an_intact_bundle_has_no_findings(bundle):
    check = verify_bundle(bundle)
    assert check.ok and check.findings() == []


def test_every_kind_of_difference_is_one_line_in_a_fixed_order(bundle):
    (bundle / "instruction.md").write_text("edited\n")
    (bundle / "oracle" / "solve.sh").chmod(0o644)
    (bundle / "plan.json").unlink()
    (bundle / "extra.txt").write_text("x")
    check = verify_bundle(bundle)
    assert not check.ok
    assert check.findings() == ["altered: instruction.md", "mode changed: oracle/solve.sh", "missing: plan.json",
                                "not in manifest: extra.txt"]


def test_a_mode_change_alone_is_a_finding(bundle):
    (bundle / "oracle" / "solve.sh").chmod(0o644)  # same bytes, no longer executable
    check = verify_bundle(bundle)
    assert not check.ok and check.findings() == ["mode changed: oracle/solve.sh"]


def test_the_manifests_own_problem_comes_first():
    check = BundleCheck(altered=("a",), missing=(), unexpected=(), problem="manifest.json itself was edited")
    assert check.findings() == ["manifest.json itself was edited", "altered: a"]
