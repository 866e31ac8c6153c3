"""tests/test.sh of an exported task, played without Docker: every root it uses is an environment
variable. A scored or failed verdict becomes Harbor's numeric reward.json; a void or infra_error
trial writes no reward and exits non-zero (Harbor records an error, not a score)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _verdict(variant: str, status: str, reward: int = 0, outcome: bool = False, safe: bool = False,
             reason: str | None = None) -> dict:
    return {"schema_version": "arenac.verdict/v1", "task": "revoked-grant", "variant": variant, "status": status,
            "reason": reason, "reward": reward, "outcome": outcome, "safe_repair": safe}


def _play(task: Path, out: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARENAC_PYTHON": sys.executable, "ARENAC_TESTS_DIR": str(task / "tests"),
           "ARENAC_OUT_DIR": str(out), "ARENAC_VERIFIER_LOGS": str(logs)}
    return subprocess.run(["sh", str(task / "tests" / "test.sh")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def _write(out: Path, verdict: dict, reward: dict | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "verdict.json").write_text(json.dumps(verdict))
    if reward is not None:
        (out / "reward.json").write_text(json.dumps(reward))


@pytest.mark.parametrize(("status", "reward", "outcome", "safe"), [
    ("scored", 1, True, True), ("scored", 0, True, False), ("failed", 0, False, False)])
def test_a_scored_trial_becomes_a_numeric_reward(sample, tmp_path, status, reward, outcome, safe):
    _, task = sample
    reason = "restart failed" if status == "failed" else None
    verdict = _verdict(task.name, status, reward, outcome, safe, reason=reason)
    _write(tmp_path / "out", verdict, {"reward": reward, "outcome": outcome, "safe_repair": safe})
    result = _play(task, tmp_path / "out", tmp_path / "logs")
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "logs" / "reward.json").read_text())
    assert written == {"reward": reward, "outcome": int(outcome), "safe_repair": int(safe)}
    assert all(type(v) is int for v in written.values())
    assert json.loads((tmp_path / "logs" / "verdict.json").read_text()) == verdict
    assert f"reward {reward}" in result.stdout


@pytest.mark.parametrize("status", ["void", "infra_error"])
def test_an_unscored_trial_writes_no_reward_and_fails(sample, tmp_path, status):
    _, task = sample
    _write(tmp_path / "out", _verdict(task.name, status, reason="fault 'grant' did not manifest within 30s"))
    result = _play(task, tmp_path / "out", tmp_path / "logs")
    assert result.returncode == 1
    assert not (tmp_path / "logs" / "reward.json").exists()
    assert (tmp_path / "logs" / "verdict.json").exists()
    [line] = result.stderr.strip().splitlines()
    assert status in line and "did not manifest" in line


def test_no_verdict_another_variant_or_a_disagreeing_reward_is_an_error(sample, tmp_path):
    _, task = sample
    result = _play(task, tmp_path / "none", tmp_path / "logs")
    assert result.returncode == 2 and "no verdict" in result.stderr
    _write(tmp_path / "other", _verdict("revoked-grant-00000000", "scored", 1, True, True))
    result = _play(task, tmp_path / "other", tmp_path / "logs")
    assert result.returncode == 2 and "revoked-grant-00000000" in result.stderr
    _write(tmp_path / "mixed", _verdict(task.name, "scored", 0), {"reward": 1, "outcome": True, "safe_repair": True})
    result = _play(task, tmp_path / "mixed", tmp_path / "logs")
    assert result.returncode == 2 and "disagrees" in result.stderr
    assert not (tmp_path / "logs" / "reward.json").exists()
    assert "Traceback" not in result.stderr
