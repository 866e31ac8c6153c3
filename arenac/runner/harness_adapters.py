"""Where the episode meets the verifier: the pinned grading inputs, the grade, the live checks.

Each function is a thin seam so that the episode reads as the timeline it is (the machinery it runs
on is the backend's: backend.py). The verifier is
imported with this module (arenac.verify.grade brings the rest of it), before any episode starts:
grading then runs the code that was installed when the episode began, whatever happens to the
files on disk meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from arenac.core.serialize import write_atomic
from arenac.model.baseline import baseline_file
from arenac.model.verdict import Verdict, Window
from arenac.verify.evidence import Evidence, EvidenceError
from arenac.verify.grade import grade as grade_evidence
from arenac.verify.grade import parse_gates, write_results
from arenac.verify.metrics import Measurer
from arenac.verify.outcome import evaluate_predicate
from arenac.verify.verdict import unscored


# ---- verifier --------------------------------------------------------------------------------------
def copy_grading_inputs(bundle, evidence: Path) -> None:
    """The pinned gates and the calibrated baseline of the bundle's own load profile (plan.json's
    `load.name`) into the evidence (for re-grading later). A profile never calibrated has none to
    copy: evidence/baseline.json is then absent (a stale one removed), and a gate that reads a
    baseline figure is refused at grading with the reason (never another profile's figures)."""
    # atomically: teardown rewrites them, and a crash then must not leave a part of either
    write_atomic(evidence / "gates.json", bundle.gates_bytes)
    plan = bundle.plan
    baseline = resources.files("arenac.library").joinpath(f"substrates/{plan.substrate}/"
                                                          f"{baseline_file(plan.load.name)}")
    if baseline.is_file():
        write_atomic(evidence / "baseline.json", baseline.read_bytes())
    else:
        (evidence / "baseline.json").unlink(missing_ok=True)


def grade(run_dir: Path, bundle) -> Verdict:
    """Grade with the gates pinned when the bundle was opened (never a file re-read now); the
    verdict records the pinned digests."""
    try:
        verdict = grade_evidence(run_dir / "evidence", gates=parse_gates(bundle.gates_bytes))
    except EvidenceError as error:  # it names the file: the pinned gates or a piece of evidence
        verdict = unscored(bundle.plan.task, bundle.plan.variant, "infra_error", f"unreadable evidence: {error}")
    verdict = verdict.model_copy(update={"pinned": bundle.digests()})
    write_results(run_dir, verdict)
    return verdict


@dataclass(frozen=True)
class LiveCheck:
    """A predicate evaluated live: whether it holds, and its detail or why it could not be
    evaluated. Returned to the caller, never kept here: episodes side by side (qualify --jobs)
    evaluate at once, and each void record must carry its own episode's reason."""

    holds: bool
    detail: str


def check_live(predicate, evidence: Path, now_s: float, window_s: float) -> LiveCheck:
    """Evaluate a predicate live over the last `window_s` plan seconds of the growing ledger."""
    if not (evidence / "ledger.json").exists():
        return LiveCheck(False, f"no ledger yet at {evidence / 'ledger.json'}")
    try:
        check = evaluate_predicate(predicate, Measurer(Evidence(evidence)),
                                   Window(label="live", start_s=now_s - window_s, end_s=now_s))
    except (EvidenceError, OSError, ValueError) as error:
        return LiveCheck(False, f"{type(error).__name__}: {error}")
    return LiveCheck(bool(check.passed), check.detail)


