"""A user's mistakes with `arenac substrate up/status`: one clean line each, the documented exit
code, never a traceback or pydantic's raw report, and nothing started or left running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ARENAC = [sys.executable, "-m", "arenac.cli", "substrate"]
RAW = ("Traceback", "input_value", "pydantic", "errors.pydantic.dev", "validation error")


def arenac(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARENAC, *args], capture_output=True, text=True, timeout=timeout, check=False)


def processes_of(directory: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and str(directory) in " ".join(proc.info["cmdline"] or ()):
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def assert_clean_refusal(result: subprocess.CompletedProcess[str], *expected: str, code: int = 2,
                         lines: int = 1) -> None:
    err = result.stderr
    assert result.returncode == code, err
    assert not any(raw in err for raw in RAW), err
    assert len(err.strip().splitlines()) == lines, err
    for text in expected:
        assert text in err, err


@pytest.mark.parametrize(("args", "expected"), [
    (["--release", "nosvc=1.4.3"],
     ["nosvc", "unknown service", "gateway, auth, channel, message, fanout, maintenance"]),
    (["--release", "9.9.9"], ["no such release '9.9.9'", "1.4.2"]),  # once, not once per service
    (["--release", "message=9.9.9"], ["no such release '9.9.9'"]),
    (["--set", "redis.maxmemory=lots"], ["redis.maxmemory", "'lots'"]),
    (["--set", "redis.maxmemoryPolicy=bogus"], ["redis.maxmemoryPolicy", "noeviction", "'bogus'"]),
    (["--set", "redis.maxmemry=1mb"], ["redis.maxmemry", "unknown setting"]),
    (["--set", "postgres.bogus_setting=1"], ['unrecognized configuration parameter "bogus_setting"']),
    (["--set", "postgres.idle_in_transaction_session_timeout=soon"], ["idle_in_transaction_session_timeout", "soon"]),
    (["--set", "message.SEQUENCER_MODE=sometimes"], ["services.message.config.SEQUENCER_MODE", "atomic, rmw"]),
    (["--set", "nosvc.DB_POOL_SIZE=1"], ["nosvc.DB_POOL_SIZE", "SERVICE.KEY"]),
    (["--set", "TIME_SCALE"], ["expected KEY=VALUE"]),
])
def test_bad_values_are_refused_before_anything_starts(tmp_path: Path, args: list[str], expected: list[str]) -> None:
    d = tmp_path / "d"
    result = arenac("up", "spine", "--dir", str(d), *args)
    assert_clean_refusal(result, *expected)
    assert not d.exists()  # refused before the directory was even created
    assert not processes_of(tmp_path)


def test_two_problems_are_two_lines(tmp_path: Path) -> None:
    result = arenac("up", "spine", "--dir", str(tmp_path / "d"),
                    "--set", "message.SEQUENCER_MODE=sometimes", "--set", "message.DB_POOL_SIZE=0")
    assert_clean_refusal(result, "SEQUENCER_MODE", "DB_POOL_SIZE", lines=2)


def test_unusable_dir_and_ready_file_are_refused_before_anything_starts(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    assert_clean_refusal(arenac("up", "spine", "--dir", str(a_file / "sub")), str(a_file / "sub"), "cannot create")

    d = tmp_path / "d"
    missing = tmp_path / "nonexistent" / "r.json"
    result = arenac("up", "spine", "--dir", str(d), "--ready-file", str(missing))
    assert_clean_refusal(result, "--ready-file", "does not exist")
    assert not (d / "postgres").exists() and not (d / "logs").exists()  # the stack never started
    assert not processes_of(tmp_path)


@pytest.mark.live
def test_a_component_that_fails_to_start_is_reported_with_its_log(tmp_path: Path) -> None:
    # valid for the server's argument parser, fatal only when it loads the library at start-up
    d = tmp_path / "d"
    result = arenac("up", "spine", "--dir", str(d), "--set", "postgres.shared_preload_libraries=no_such_library")
    assert_clean_refusal(result, "postgres failed during start-up", "no_such_library", code=1,
                         lines=len(result.stderr.strip().splitlines()))
    assert result.stderr.startswith("arenac substrate: postgres failed during start-up")
    assert not processes_of(d)  # Redis and the services it had started are stopped too


@pytest.mark.parametrize("content", ["{}", "not json at all", '{"gateway": 1}', "[]"])
def test_status_of_a_file_that_is_not_an_endpoints_file(tmp_path: Path, content: str) -> None:
    ready = tmp_path / "ready.json"
    ready.write_text(content)
    assert_clean_refusal(arenac("status", "--ready-file", str(ready)), "not a spine endpoints file")
