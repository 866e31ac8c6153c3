"""grade(): the verdict as a pure function of an evidence directory and the gates.

Contract:
- `grade(evidence_dir, gates_file=None, gates=None) -> Verdict` reads nothing but the evidence
  directory and the gates (`gates`, already read: what the runner pinned at the start of the
  episode; else `gates_file`; default `evidence_dir/gates.json`), writes nothing, and raises
  `EvidenceError` (one line, naming the file) when they cannot be read.
- A timeline whose status is `failed`, `void` or `infra_error` is not scored: reward 0, and
  the verdict's `status` and `reason` say why (`failed` counts as the agent's failure).
  Otherwise both gates are evaluated in full (no short-circuit, so the verdict explains every
  check) over the soak [soak_start_s, soak_end_s).
- `main(gates_path, argv)` is what a bundle's verifier/verify.py calls with argv =
  [RUN_DIR]: it grades RUN_DIR/evidence against `gates_path`, writes RUN_DIR/verdict.json
  and RUN_DIR/reward.json, prints a summary, and returns 0 whatever the reward. When the
  evidence cannot be read it still writes both files (status infra_error, reward 0),
  says why on stderr, and returns 1; bad usage returns 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import ValidationError

from arenac.core.serialize import dump_json, model_data, write_atomic
from arenac.model.evidence import GatesFile
from arenac.model.verdict import Gate, Verdict, Window
from arenac.verify.evidence import Evidence, EvidenceError, read_model
from arenac.verify.metrics import Measurer, baseline_profile
from arenac.verify.outcome import evaluate_predicates
from arenac.verify.safety import SafetyContext, check_safety
from arenac.verify.verdict import scored, summary, unscored

EXIT_OK, EXIT_UNREADABLE, EXIT_USAGE = 0, 1, 2


def read_gates(path: Path) -> GatesFile:
    return read_model(Path(path), GatesFile, str(path))


def parse_gates(data: bytes, label: str = "verifier/gates.json") -> GatesFile:
    """Gates from bytes already read (the runner's pinned copy)."""
    try:
        return GatesFile.model_validate_json(data)
    except ValidationError as error:
        raise EvidenceError(f"{label}: not of the documented shape: {error.errors()[0]['msg']}") from None


def grade(evidence_dir: Path, gates_file: Path | None = None, gates: GatesFile | None = None) -> Verdict:
    evidence = Evidence(Path(evidence_dir))
    if gates is None:
        gates_file = Path(gates_file) if gates_file is not None else evidence.directory / "gates.json"
        gates = read_gates(gates_file)
    timeline = evidence.timeline
    if timeline.status != "scored":
        reason = timeline.void_reason or {"void": "the trial is void",
                                          "failed": "a harness step failed after the handover"}.get(
            timeline.status, "an infrastructure error ended the trial")
        return unscored(gates.task, gates.variant, timeline.status, reason)
    soak = Window(label="soak", start_s=timeline.soak_start_s, end_s=timeline.soak_end_s)
    measurer = Measurer(evidence, baseline_profile(gates.baseline))
    outcome_checks = evaluate_predicates(gates.gates.outcome, measurer, soak)
    ctx = SafetyContext(evidence=evidence, measurer=measurer, outcome=gates.gates.outcome, soak=soak,
                        repaired=all(c.passed for c in outcome_checks), repairs=gates.repairs or ())
    safety_checks = tuple(check_safety(check, ctx) for check in gates.gates.safety)
    return scored(gates.task, gates.variant, soak,
                  Gate(passed=all(c.passed for c in outcome_checks), checks=outcome_checks),
                  Gate(passed=all(c.passed for c in safety_checks), checks=safety_checks))


def write_results(run_dir: Path, verdict: Verdict) -> None:
    """RUN_DIR/verdict.json and RUN_DIR/reward.json, canonical JSON, each written atomically (a
    crash leaves the old file or the new one, never a part; serialize.write_atomic)."""
    write_atomic(Path(run_dir) / "verdict.json", dump_json(model_data(verdict)))
    write_atomic(Path(run_dir) / "reward.json", dump_json(model_data(verdict.reward_record())))


def main(gates_path: Path, argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: verify.py RUN_DIR", file=sys.stderr)
        return EXIT_USAGE
    run_dir = Path(argv[0])
    if not run_dir.is_dir():
        print(f"verify: {run_dir} is not a directory", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        verdict = grade(run_dir / "evidence", Path(gates_path))
    except EvidenceError as error:
        print(f"verify: cannot grade {run_dir}: {error}", file=sys.stderr)
        task, variant = _names(Path(gates_path))
        write_results(run_dir, unscored(task, variant, "infra_error", f"unreadable evidence: {error}"))
        return EXIT_UNREADABLE
    write_results(run_dir, verdict)
    print(summary(verdict))
    return EXIT_OK


def _names(gates_path: Path) -> tuple[str | None, str | None]:
    try:
        gates = read_gates(gates_path)
    except EvidenceError:
        return None, None
    return gates.task, gates.variant
