"""Grading reads only what was pinned: gates edited after the bundle was opened change nothing,
and the verdict records the digests of what was used."""

from __future__ import annotations

import hashlib
import json

import pytest

from arenac.pipeline import compile_paths, write_bundles
from arenac.runner import harness_adapters as adapters
from arenac.runner.bundle import BundleRefused, open_bundle
from arenac.verify import grade
from verify.recorded import ROOT, RecordedRun

PERMISSIVE = {"task": "minimal", "variant": "forged", "gates": {"outcome": [], "safety": []}}


@pytest.fixture
def bundle_dir(tmp_path):
    spec = ROOT / "tests" / "golden" / "minimal" / "spec.arena"
    (written,) = write_bundles(compile_paths([str(spec)]), tmp_path / "build")
    return written.path


def test_gates_rewritten_after_opening_do_not_change_the_verdict(bundle_dir, tmp_path):
    bundle = open_bundle(bundle_dir)
    original = (bundle_dir / "verifier" / "gates.json").read_bytes()
    # the attack: between the start-of-run check and grading, the gates become vacuous
    (bundle_dir / "verifier" / "gates.json").write_text(json.dumps(PERMISSIVE))
    run = RecordedRun(tmp_path)
    run.challenges["restart"] = [{"service": "maintenance", "t": 262.0, "ok": True}]  # the golden's survives restart
    run.traffic("send", 140, 260, errors=5)  # the repair did not work: sends keep failing
    run_dir = run.write()
    (run_dir / "evidence" / "gates.json").write_text(json.dumps(PERMISSIVE))  # the evidence copy too

    assert grade(run_dir / "evidence").reward == 1  # what the forged gates would have given

    result = adapters.grade(run_dir, bundle)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert result.reward == 0 and verdict["status"] == "scored" and verdict["outcome"] is False
    assert result.model_dump(mode="json") == verdict  # the Verdict returned is the one written
    assert verdict["variant"] == bundle.plan.variant  # graded by the bundle's own gates
    assert verdict["pinned"]["verifier/gates.json"] == hashlib.sha256(original).hexdigest()
    assert verdict["pinned"]["bundle_digest"] == json.loads((bundle_dir / "manifest.json").read_text())["bundle_digest"]


def test_the_evidence_copy_of_the_gates_is_the_pinned_one(bundle_dir, tmp_path):
    bundle = open_bundle(bundle_dir)
    original = (bundle_dir / "verifier" / "gates.json").read_bytes()
    (bundle_dir / "verifier" / "gates.json").write_text(json.dumps(PERMISSIVE))
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    adapters.copy_grading_inputs(bundle, evidence)
    assert (evidence / "gates.json").read_bytes() == original


def test_a_bundle_altered_before_opening_is_refused(bundle_dir):
    (bundle_dir / "verifier" / "gates.json").write_text(json.dumps(PERMISSIVE))
    with pytest.raises(BundleRefused, match=r"altered: verifier/gates\.json"):
        open_bundle(bundle_dir)


def test_rbac_widened_after_opening_is_not_what_the_broker_enforces(bundle_dir):
    bundle = open_bundle(bundle_dir)
    (role,) = [p for p in (bundle_dir / "rbac").glob("*.yaml") if p.name == "role.yaml"]
    original = role.read_bytes()
    role.write_text("kind: Role\nrules:\n- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n")
    assert original in bundle.rbac_bytes and role.read_bytes() not in bundle.rbac_bytes
    assert "rbac/role.yaml" in bundle.digests()
