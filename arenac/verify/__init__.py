"""The verifier: a pure function of an evidence bundle and the gates (docs/evidence.md).

`grade(evidence_dir, gates_file=None) -> Verdict` evaluates the outcome gate (measured
client-side predicates over the soak) and the safety gate (durability, scope, guards,
protected data) and explains every check; `main(gates_path, argv)` is the entry point of a
bundle's generated verifier/verify.py and writes verdict.json and reward.json; `arenac grade`
(arenac/cli/grade.py) re-grades a saved run. Nothing here touches a live system.
"""

from arenac.model.verdict import Check, Gate, Verdict
from arenac.verify.evidence import EvidenceError
from arenac.verify.grade import grade, main, write_results
from arenac.verify.verdict import summary

__all__ = ["Check", "EvidenceError", "Gate", "Verdict", "grade", "main", "summary", "write_results"]
