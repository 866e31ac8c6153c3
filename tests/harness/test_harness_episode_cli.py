"""`arenac harness episode | status | finish` without a live episode: each refuses bad input in one
line with its exit code, never a traceback; `status --handed-over` answers 0, 1 or 2 from
status.json; `finish` asks for the end, waits no longer than its timeout and copies a graded run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from arenac.cli import main
from arenac.model.harness_status import HarnessStatus
from arenac.runner.external_control import Control
from helpers.golden import complete_variant


def run(*args: str) -> Result:
    result = CliRunner().invoke(main, ["harness", *args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _control(tmp_path: Path, **fields) -> Path:
    control = Control(tmp_path / "ctl")
    control.create()
    control.write(HarnessStatus(**{"pid": os.getpid(), **fields}))
    return control.root


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("a-token\n")
    return path


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


# ---- episode ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("listen", "message"), [
    ("7400", "'7400': use HOST:PORT"),
    ("0.0.0.0:http", "use HOST:PORT"),
    ("0.0.0.0:0", "use HOST:PORT"),
    ("0.0.0.0:70000", "use HOST:PORT"),
])
def test_episode_refuses_a_listen_address_that_is_none(tmp_path: Path, token: Path, listen: str,
                                                       message: str) -> None:
    result = run("episode", str(tmp_path), "--listen", listen, "--token-file", str(token),
                 "--run-dir", str(tmp_path / "ctl"))
    assert result.exit_code == 2 and message in result.output


def test_episode_refuses_a_token_it_cannot_read_or_that_is_no_word(tmp_path: Path) -> None:
    args = [str(complete_variant("minimal")), "--listen", "127.0.0.1:7400", "--run-dir", str(tmp_path / "ctl")]
    missing = run("episode", *args, "--token-file", str(tmp_path / "nope"))
    assert missing.exit_code == 2
    assert "arenac harness episode: --token-file" in missing.output and "cannot read it" in missing.output
    for text in ("", "  \n", "two words"):
        (tmp_path / "token").write_text(text)
        empty = run("episode", *args, "--token-file", str(tmp_path / "token"))
        assert empty.exit_code == 2 and "the token must be one non-empty word" in empty.output
    assert not (tmp_path / "ctl").exists()  # nothing was started


def test_episode_refuses_what_is_not_a_bundle(tmp_path: Path, token: Path) -> None:
    result = run("episode", str(tmp_path), "--listen", "127.0.0.1:7400", "--token-file", str(token),
                 "--run-dir", str(tmp_path / "ctl"))
    assert result.exit_code == 2
    assert result.output.startswith("arenac harness episode: ") and len(result.output.splitlines()) == 1


def test_episode_refuses_a_port_it_cannot_listen_on(tmp_path: Path, token: Path, taken_port: int) -> None:
    result = run("episode", str(complete_variant("minimal")), "--listen", f"127.0.0.1:{taken_port}",
                 "--token-file", str(token), "--run-dir", str(tmp_path / "ctl"))
    assert result.exit_code == 2
    assert f"--listen 127.0.0.1:{taken_port}: cannot listen there: Address already in use" in result.output


def test_episode_refuses_a_run_dir_where_an_episode_runs(tmp_path: Path, token: Path) -> None:
    root = _control(tmp_path, phase="handed_over", handed_over=True)  # this test's process: alive
    result = run("episode", str(complete_variant("minimal")), "--listen", "127.0.0.1:7400", "--token-file",
                 str(token), "--run-dir", str(root))
    assert result.exit_code == 2 and f"the episode of process {os.getpid()} runs there" in result.output


# ---- status -----------------------------------------------------------------------------------
def test_status_before_any_episode_is_not_yet_or_none(tmp_path: Path) -> None:
    waiting = run("status", "--run-dir", str(tmp_path / "ctl"), "--handed-over")
    assert waiting.exit_code == 1 and "no episode has started at" in waiting.output
    shown = run("status", "--run-dir", str(tmp_path / "ctl"))
    assert shown.exit_code == 2 and "no episode has started there (no status.json)" in shown.output
    (tmp_path / "ctl").mkdir()
    (tmp_path / "ctl" / "status.json").write_text("{}")
    foreign = run("status", "--run-dir", str(tmp_path / "ctl"), "--handed-over")
    assert foreign.exit_code == 2 and "not the status of an `arenac harness episode`" in foreign.output


@pytest.mark.parametrize(("fields", "code", "message"), [
    ({"phase": "provisioning"}, 1, "not handed over yet (phase provisioning)"),
    ({"phase": "handed_over", "handed_over": True}, 0, "handed over (phase handed_over)"),
    ({"phase": "graded", "handed_over": True, "trial_status": "scored", "reward": 0}, 0, "handed over (phase graded)"),
    ({"phase": "graded", "trial_status": "void", "reward": 0, "reason": "fault 'grant' did not manifest"}, 2,
     "the episode ended before the handover: void: fault 'grant' did not manifest"),
    ({"phase": "ended", "reason": "OSError: disk full"}, 2, "ended before the handover: ended: OSError: disk full"),
])
def test_status_handed_over_answers_from_the_status(tmp_path: Path, fields: dict, code: int, message: str) -> None:
    result = run("status", "--run-dir", str(_control(tmp_path, **fields)), "--handed-over")
    assert result.exit_code == code and message in result.output and len(result.output.splitlines()) == 1


def test_status_of_a_provisioning_episode_whose_process_died_is_never(tmp_path: Path) -> None:
    result = run("status", "--run-dir", str(_control(tmp_path, phase="provisioning", pid=_dead_pid())),
                 "--handed-over")
    assert result.exit_code == 2 and "its process is gone" in result.output


def test_status_without_the_flag_prints_the_status(tmp_path: Path) -> None:
    result = run("status", "--run-dir", str(_control(tmp_path, phase="provisioning")))
    assert result.exit_code == 0 and json.loads(result.output) == {"phase": "provisioning", "pid": os.getpid(),
                                                                   "handed_over": False}


# ---- finish -----------------------------------------------------------------------------------
def test_finish_without_an_episode_is_refused(tmp_path: Path) -> None:
    result = run("finish", "--run-dir", str(tmp_path / "ctl"), "--out", str(tmp_path / "out"), "--timeout", "1")
    assert result.exit_code == 2 and "no episode has started there" in result.output
    assert not (tmp_path / "out").exists()


def test_finish_asks_for_the_end_and_gives_up_at_its_timeout(tmp_path: Path) -> None:
    root = _control(tmp_path, phase="handed_over", handed_over=True)
    result = run("finish", "--run-dir", str(root), "--out", str(tmp_path / "out"), "--timeout", "0.2")
    assert result.exit_code == 1 and "no grade within 0.2 s (phase handed_over)" in result.output
    assert (root / "finish.request").exists()


def test_finish_of_an_episode_that_died_says_so_at_once(tmp_path: Path) -> None:
    root = _control(tmp_path, phase="agent_done", handed_over=True, pid=_dead_pid())
    result = run("finish", "--run-dir", str(root), "--out", str(tmp_path / "out"), "--timeout", "600")
    assert result.exit_code == 1 and "the episode ended without a grade: its process is gone" in result.output


def test_finish_copies_a_graded_run(tmp_path: Path) -> None:
    root = _control(tmp_path, phase="graded", handed_over=True, trial_status="scored", reward=1)
    (root / "run" / "evidence").mkdir(parents=True)
    (root / "run" / "reward.json").write_text('{"reward": 1}')
    (root / "run" / "evidence" / "boundary.json").write_text("{}")
    result = run("finish", "--run-dir", str(root), "--out", str(tmp_path / "out"), "--timeout", "0")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"out": str(tmp_path / "out"), "reward": 1, "status": "scored"}
    assert (tmp_path / "out" / "reward.json").read_text() == '{"reward": 1}'
    assert (tmp_path / "out" / "evidence" / "boundary.json").exists()
    assert not (root / "finish.request").exists()  # graded already: nothing to ask


def test_finish_into_an_out_it_cannot_make_is_refused(tmp_path: Path) -> None:
    root = _control(tmp_path, phase="graded", handed_over=True, trial_status="void", reward=0)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    result = run("finish", "--run-dir", str(root), "--out", str(out), "--timeout", "0")
    assert result.exit_code == 2 and f"--out {out}: cannot copy the run there: Not a directory" in result.output


# ---- episode --target-namespace (the cluster backend: arenac/runner/kube/pod_backend.py) -----------
PASSWORD_KEYS = ("postgres-password", "spine-admin-password", "spine-app-password", "spine-operator-password",
                 "spine-readonly-password")


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    """The spine chart's Secrets' keys as the harness pod mounts them, one file per key."""
    directory = tmp_path / "credentials"
    directory.mkdir()
    for key in PASSWORD_KEYS:
        (directory / key).write_text("pw")
    (directory / "users.acl").write_text("".join(f"user {u} on >pw ~* +@all\n"
                                                 for u in ("default", "fanout", "harness", "agent")))
    (directory / "token").write_text("admin\n")
    return directory


def _on_cluster(tmp_path: Path, token: Path, *extra: str) -> Result:
    return run("episode", str(complete_variant("minimal")), "--listen", "127.0.0.1:7400", "--token-file",
               str(token), "--run-dir", str(tmp_path / "ctl"), *extra)


@pytest.mark.parametrize("namespace", ["App", "-app", "app_1", "a" * 64, ""])
def test_episode_refuses_a_target_namespace_that_is_no_namespaces_name(tmp_path: Path, token: Path,
                                                                      credentials: Path, namespace: str) -> None:
    result = _on_cluster(tmp_path, token, "--target-namespace", namespace, "--credentials", str(credentials))
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1
    assert f"arenac harness episode: --target-namespace {namespace!r}: not a namespace's name" in result.output
    assert not (tmp_path / "ctl").exists()  # nothing was started


def test_episode_on_a_cluster_refuses_credentials_it_cannot_read_or_that_lack_a_key(tmp_path: Path, token: Path,
                                                                                  credentials: Path) -> None:
    missing = _on_cluster(tmp_path, token, "--target-namespace", "app-1", "--credentials", str(tmp_path / "none"))
    assert missing.exit_code == 2 and len(missing.output.splitlines()) == 1
    assert f"--credentials {tmp_path / 'none'}: cannot read it" in missing.output
    (credentials / "token").unlink()
    lacking = _on_cluster(tmp_path, token, "--target-namespace", "app-1", "--credentials", str(credentials))
    assert lacking.exit_code == 2 and len(lacking.output.splitlines()) == 1
    assert f"--credentials {credentials}: the credentials lack token" in lacking.output
    assert not (tmp_path / "ctl").exists()


def test_episode_on_a_cluster_reads_the_credentials_from_arenac_credentials(tmp_path: Path, token: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENAC_CREDENTIALS", str(tmp_path / "from-env"))
    result = _on_cluster(tmp_path, token, "--target-namespace", "app-1")
    assert result.exit_code == 2 and f"--credentials {tmp_path / 'from-env'}: cannot read it" in result.output


def test_episode_on_a_cluster_refuses_without_an_api_to_use(tmp_path: Path, token: Path, credentials: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a pod (no service host in the environment) and without a kubeconfig: refused before anything ran;
    a kubeconfig that cannot be used is refused the same way."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    outside = _on_cluster(tmp_path, token, "--target-namespace", "app-1", "--credentials", str(credentials))
    assert outside.exit_code == 2 and len(outside.output.splitlines()) == 1
    assert "--target-namespace app-1: no Kubernetes API to use: not in a pod with a ServiceAccount token" \
        in outside.output
    (tmp_path / "kubeconfig").write_text("not: [a kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    broken = _on_cluster(tmp_path, token, "--target-namespace", "app-1", "--credentials", str(credentials))
    assert broken.exit_code == 2 and len(broken.output.splitlines()) == 1
    assert (f"no Kubernetes API to use: cannot use {tmp_path / 'kubeconfig'}: not YAML (line 1, column 19)"
            in broken.output)
    assert not (tmp_path / "ctl").exists()


def test_episode_on_a_cluster_goes_past_its_checks_with_a_usable_kubeconfig(tmp_path: Path, token: Path,
                                                                            credentials: Path, taken_port: int,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side: a well-formed kubeconfig (nothing is asked of its server before the episode) and
    credentials that make the endpoints pass the cluster checks; the next check (the listen address) refuses."""
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    result = run("episode", str(complete_variant("minimal")), "--listen", f"127.0.0.1:{taken_port}", "--token-file",
                 str(token), "--run-dir", str(tmp_path / "ctl"), "--target-namespace", "app-1",
                 "--credentials", str(credentials))
    assert result.exit_code == 2 and "cannot listen there" in result.output


def test_episode_refuses_credentials_without_a_target_namespace(tmp_path: Path, token: Path, credentials: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    given = _on_cluster(tmp_path, token, "--credentials", str(credentials))
    assert given.exit_code == 2 and len(given.output.splitlines()) == 1
    assert "arenac harness episode: --credentials goes with --target-namespace" in given.output
    # from the environment (the harness image's default) it is no mistake: the next check answers
    monkeypatch.setenv("ARENAC_CREDENTIALS", str(credentials))
    quiet = run("episode", str(tmp_path), "--listen", "127.0.0.1:7400", "--token-file", str(token),
                "--run-dir", str(tmp_path / "ctl"))
    assert quiet.exit_code == 2 and "--credentials" not in quiet.output
