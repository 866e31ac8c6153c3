"""grade(), main() and `arenac grade`: rewards, void and infra_error timelines, files written,
unreadable evidence, and a bundle's generated verifier/verify.py end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from arenac.cli.grade import grade as grade_command
from arenac.model.gates import Gates, Invariant, SurvivesRestart
from arenac.verify import EvidenceError, Verdict, grade, main
from arenac.verify.evidence import Baseline
from verify.recorded import LIBRARY_BASELINE, ROOT, RecordedRun, const, encode, metric, pred

# the golden bundle's one variant, whatever its content-hash id is
(GOLDEN_VERIFIER,) = (ROOT / "tests" / "golden" / "minimal" / "expected" / "minimal").glob("minimal-*/verifier")


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    recorded = RecordedRun(tmp_path)
    recorded.safety = [SurvivesRestart(services=("message",)),
                       Invariant(sequence="messages.seq", properties=("dense", "unique"))]
    return recorded


def read(path):
    return json.loads(path.read_text())


# ---- rewards -------------------------------------------------------------------------------
def test_reward_is_one_when_both_gates_pass(run):
    verdict = run.grade()
    assert (verdict.status, verdict.reward, verdict.outcome, verdict.safe_repair) == ("scored", 1, True, True)
    assert verdict.task == "recorded" and verdict.soak.start_s == 140.0


def test_reward_is_zero_when_the_outcome_fails(run):
    run.traffic("send", 140, 260, errors=5)
    verdict = run.grade()
    assert (verdict.reward, verdict.outcome, verdict.safe_repair) == (0, False, True)


def test_reward_is_zero_when_the_repair_is_unsafe(run):
    run.snapshots["soak_end"]["sequences"]["messages.seq"]["duplicates"] = 2
    verdict = run.grade()
    assert (verdict.reward, verdict.outcome, verdict.safe_repair) == (0, True, False)


@pytest.mark.parametrize("status, reason, expected", [
    ("void", "the fault never manifested: error_rate(send) stayed at 0", "the fault never manifested"),
    ("void", None, "the trial is void"),
    ("infra_error", "PostgreSQL did not start", "PostgreSQL did not start"),
])
def test_an_unscored_timeline_gives_reward_zero_and_says_why(run, status, reason, expected):
    # the trial ended before the agent's window: the timeline has no later times
    run.timeline = {"time_scale": 1.0, "status": status, "void_reason": reason, "declared_s": None,
                    "warmup_end_s": 20.0, "handover_s": 40.0}
    run.write()
    (run.run_dir / "evidence" / "ledger.json").unlink()  # a void run may have no usable ledger
    verdict = grade(run.run_dir / "evidence")
    assert (verdict.status, verdict.reward, verdict.outcome, verdict.safe_repair) == (status, 0, False, False)
    assert expected in verdict.reason and verdict.gates is None


# ---- main(): what verify.py calls --------------------------------------------------------
def test_main_writes_verdict_and_reward(run, capsys):
    run.write()
    assert main(run.run_dir / "evidence" / "gates.json", [str(run.run_dir)]) == 0
    assert read(run.run_dir / "reward.json") == {"reward": 1, "outcome": True, "safe_repair": True}
    verdict = Verdict.model_validate(read(run.run_dir / "verdict.json"))
    assert verdict.gates.outcome.checks[0].text == "error_rate(send) <= 1%"
    assert "reward: 1" in capsys.readouterr().out


def test_main_writes_a_failing_reward_and_still_exits_zero(run):
    run.traffic("send", 140, 260, errors=5)
    run.write()
    assert main(run.run_dir / "evidence" / "gates.json", [str(run.run_dir)]) == 0
    assert read(run.run_dir / "reward.json") == {"reward": 0, "outcome": False, "safe_repair": True}


def test_main_writes_reward_zero_for_a_void_run(run):
    run.timeline.update(status="void", void_reason="no manifestation")
    run.write()
    assert main(run.run_dir / "evidence" / "gates.json", [str(run.run_dir)]) == 0
    assert read(run.run_dir / "reward.json") == {"reward": 0, "outcome": False, "safe_repair": False}
    verdict = read(run.run_dir / "verdict.json")
    assert verdict["status"] == "void" and verdict["reason"] == "no manifestation"


def test_main_grades_against_the_gates_it_is_given(run, tmp_path):
    run.write()
    strict = read(run.run_dir / "evidence" / "gates.json")
    strict["gates"]["outcome"][0]["right"]["value"] = -1.0  # nothing can pass this
    other = tmp_path / "gates.json"
    other.write_text(json.dumps(strict))
    assert main(other, [str(run.run_dir)]) == 0
    assert read(run.run_dir / "reward.json")["reward"] == 0


def test_main_on_unreadable_evidence_records_an_infra_error(run, capsys):
    run.write()
    (run.run_dir / "evidence" / "ledger.json").write_text("{not json")
    assert main(run.run_dir / "evidence" / "gates.json", [str(run.run_dir)]) == 1
    assert "evidence/ledger.json: not valid JSON" in capsys.readouterr().err
    assert read(run.run_dir / "reward.json") == {"reward": 0, "outcome": False, "safe_repair": False}
    verdict = read(run.run_dir / "verdict.json")
    assert verdict["status"] == "infra_error" and verdict["task"] == "recorded"


def test_main_usage(capsys):
    assert main(ROOT / "gates.json", []) == 2
    assert "usage" in capsys.readouterr().err


# ---- unreadable evidence -----------------------------------------------------------------
@pytest.mark.parametrize("name, content, message", [
    ("timeline.json", None, "evidence/timeline.json: missing"),
    ("timeline.json", '{"status": "scored"}', "evidence/timeline.json: time_scale: Field required"),
    ("timeline.json", '{"status": "scored", "time_scale": 1, "warmup_end_s": 20, "handover_s": 40, '
                      '"window_end_s": 140, "soak_start_s": 140}', "a scored trial needs soak_end_s"),
    ("ledger.json", '{"time_scale": 1, "client_timeout_s": 10, "phases": [], "seconds": [{"t": 150, '
                    '"phase": "peak", "route": "send", "count": 1, "errors": 0, "hist": "bm90IGEgaGlzdA=="}]}',
     "not an HdrHistogram encoding"),
    ("ledger.json", '{"time_scale": 1, "client_timeout_s": 10, "phases": [], "seconds": [{"t": 150, '
                    '"phase": "peak", "route": "send", "count": 2, "errors": 0, "hist": "' + encode((4000,)) + '"}]}',
     "hold 1 latencies, the counts 2 requests"),
    ("ledger.json", '{"time_scale": 1, "client_timeout_s": 10, "phases": [], "seconds": [{"t": 150, '
                    '"phase": "peak", "route": "send", "count": 2, "errors": 3, "hist": ""}]}',
     r"seconds.0: Value error, errors \(3\) must lie between 0 and count \(2\)"),
    ("challenges.json", '{"restart": [{"service": "message"}]}', "evidence/challenges.json: restart.0.t"),
    ("snapshots/soak_end.json", "[]", "evidence/snapshots/soak_end.json"),
    ("gates.json", '{"gates": {"outcome": []}}', "gates.json: gates.safety: Field required"),
])
def test_unreadable_evidence_names_the_file(run, name, content, message):
    run.outcome.append(pred("p99(send) <= 1s", metric("p99", "send"), "<=", const(1.0, "duration")))
    run.write()
    path = run.run_dir / "evidence" / name
    if content is None:
        path.unlink()
    else:
        path.write_text(content)
    with pytest.raises(EvidenceError, match=message):
        grade(run.run_dir / "evidence")


def test_no_evidence_directory(tmp_path):
    with pytest.raises(EvidenceError, match="no evidence directory"):
        grade(tmp_path / "nowhere")


def test_the_library_baseline_reads_as_baseline_evidence():
    baseline = Baseline.model_validate(read(LIBRARY_BASELINE))
    assert baseline.routes["send"]["peak"].p99_ms == 6.0
    assert baseline.routes["all"]["all"].goodput_rps == 37.5


# ---- arenac grade ------------------------------------------------------------------------
def invoke(*args):
    return CliRunner().invoke(grade_command, [str(a) for a in args], catch_exceptions=False)


def test_cli_prints_the_verdict_and_writes_the_reward(run):
    run.write()
    result = invoke(run.run_dir)
    assert result.exit_code == 0
    assert "outcome: PASS" in result.output and "reward: 1" in result.output
    assert read(run.run_dir / "reward.json")["reward"] == 1


def test_cli_exits_zero_on_a_failing_run(run):
    run.snapshots["soak_end"]["sequences"]["messages.seq"]["gaps"] = 1
    run.write()
    result = invoke(run.run_dir)
    assert result.exit_code == 0 and "safety: FAIL" in result.output and "reward: 0" in result.output


def test_cli_gates_option_and_no_write(run, tmp_path):
    run.write()
    gates = read(run.run_dir / "evidence" / "gates.json")
    gates["gates"]["safety"] = []
    gates["gates"]["outcome"][0]["right"]["value"] = -1.0
    other = tmp_path / "other-gates.json"
    other.write_text(json.dumps(gates))
    result = invoke(run.run_dir, "--gates", other, "--no-write")
    assert result.exit_code == 0 and "reward: 0" in result.output
    assert not (run.run_dir / "reward.json").exists()


def test_cli_exits_one_on_unreadable_evidence_without_a_traceback(run):
    run.write()
    (run.run_dir / "evidence" / "timeline.json").unlink()
    result = CliRunner().invoke(grade_command, [str(run.run_dir)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "evidence/timeline.json: missing" in result.output
    assert "Traceback" not in result.output
    assert not (run.run_dir / "reward.json").exists()


def test_cli_refuses_a_run_marked_incomplete_and_grades_it_once_complete(run):
    run.write()
    (run.run_dir / "INCOMPLETE").write_text("the episode writing this run directory has not finished\n")
    result = CliRunner().invoke(grade_command, [str(run.run_dir)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.count("\n") == 1 and "refusing" in result.output and "marked incomplete" in result.output
    assert "Traceback" not in result.output
    assert not (run.run_dir / "reward.json").exists() and not (run.run_dir / "verdict.json").exists()
    assert CliRunner().invoke(grade_command, [str(run.run_dir), "--no-write"]).exit_code == 1
    (run.run_dir / "INCOMPLETE").unlink()  # what finish_run does once the verdict is written
    result = invoke(run.run_dir)
    assert result.exit_code == 0 and "reward: 1" in result.output
    assert read(run.run_dir / "reward.json")["reward"] == 1


def test_cli_exits_one_on_a_missing_run_dir(tmp_path):
    result = CliRunner().invoke(grade_command, [str(tmp_path / "absent")])
    assert result.exit_code == 1 and "is not a directory" in result.output


# ---- a bundle's generated verifier -------------------------------------------------------
def test_the_generated_verify_py_grades_a_recorded_run(run, tmp_path):
    verifier = tmp_path / "bundle" / "verifier"
    shutil.copytree(GOLDEN_VERIFIER, verifier)
    gates = Gates.model_validate(read(verifier / "gates.json")["gates"])
    run.outcome, run.safety = list(gates.outcome), list(gates.safety)
    run.challenges["restart"] = [{"service": "maintenance", "t": 262.0, "ok": True}]  # the golden's survives restart
    run.write()
    done = subprocess.run([sys.executable, str(verifier / "verify.py"), str(run.run_dir)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read(run.run_dir / "reward.json") == {"reward": 1, "outcome": True, "safe_repair": True}
    run.snapshots["soak_end"]["config"]["channel"]["READ_TIMEOUT"] = "1s"  # outside changes only config(message)
    run.write()
    done = subprocess.run([sys.executable, str(verifier / "verify.py"), str(run.run_dir)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read(run.run_dir / "reward.json") == {"reward": 0, "outcome": True, "safe_repair": False}
    assert "config(channel.READ_TIMEOUT)" in done.stdout
