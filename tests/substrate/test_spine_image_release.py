"""A release is a property of the image: an environment variable cannot swap the code it runs.

On Kubernetes the Dockerfile bakes the release into the code (releases.bake, IMAGE_RELEASE next to
the module of spine_services); the brokered local cluster gives each service a stand-in file instead. Either way
`SPINE_RELEASE` in the environment (what `kubectl set env` changes) and `RELEASE` in the config
file lose to it. A plain local stack still takes the release from its configuration.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import spine_services
from arenac.substrate.procs import Child, free_port, stop_all
from helpers import ROOT
from substrate.spine_client import Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

DOCKERFILE = ROOT / "library" / "substrates" / "spine" / "app" / "Dockerfile"


def bake_command() -> list[str]:
    """The Dockerfile's own bake step (`python -c "...bake..." "${RELEASE}"`), as argv."""
    match = re.search(r'python (?:-I )?-c "([^"]*import bake[^"]*)"', DOCKERFILE.read_text())
    assert match, "the Dockerfile bakes the release with releases.bake"
    return [sys.executable, "-c", match.group(1)]


@pytest.fixture
def image_root(tmp_path: Path) -> Path:
    """A copy of the application as an image holds it (the source tree must never carry a baked release)."""
    root = tmp_path / "image"
    shutil.copytree(Path(spine_services.__file__).parent, root / "spine_services",
                    ignore=shutil.ignore_patterns("__pycache__", "IMAGE_RELEASE"))
    return root


@pytest.fixture
def run_service(tmp_path: Path) -> Iterator:
    children: list[Child] = []

    def run(cwd: Path, env: dict[str, str], *extra: str) -> str:
        port = free_port()
        if "SPINE_ADMIN_TOKEN_FILE" not in env:
            token_file = tmp_path / "admin-token"
            token_file.write_text(TOKEN + "\n")
            env = {**env, "SPINE_ADMIN_TOKEN_FILE": str(token_file)}
        log = tmp_path / f"gateway-{port}.log"
        config = tmp_path / "gateway.yaml"
        config.write_text('RELEASE: "1.4.3"\n')  # the config file says yet another release
        argv = [sys.executable, "-m", "spine_services", "gateway", "--config", str(config),
                "--host", "127.0.0.1", "--port", str(port), *extra]
        with open(log, "wb") as out:
            popen = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        children.append(Child("gateway", popen, log))
        deadline = time.monotonic() + 20
        while True:
            assert popen.poll() is None, log.read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return f"http://127.0.0.1:{port}"
            assert time.monotonic() < deadline, "the service did not listen within 20 s"
            time.sleep(0.05)

    yield run
    stop_all([(child, signal.SIGTERM) for child in children])  # by PID


TOKEN = "image-test-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}


def base_env(pythonpath: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPINE_")}
    env["SPINE_RELEASE"] = "1.4.2"  # what `kubectl set env deploy/spine-gateway SPINE_RELEASE=1.4.2` sets
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def test_a_baked_release_wins_over_the_environment(image_root: Path, run_service) -> None:
    baked = subprocess.run([*bake_command(), "1.5.1"], cwd=image_root, capture_output=True, text=True, timeout=60,
                           check=False)
    assert baked.returncode == 0, baked.stderr
    assert (image_root / "spine_services" / "IMAGE_RELEASE").read_text() == "1.5.1\n"
    refused = subprocess.run([*bake_command(), "9.9.9"], cwd=image_root, capture_output=True, text=True, timeout=60,
                           check=False)
    assert refused.returncode != 0 and "no such release" in refused.stderr  # a bad build arg fails the build

    url = run_service(image_root, base_env(image_root))
    assert http("GET", url + "/healthz").body["release"] == "1.5.1"
    view = http("GET", url + "/admin/config", headers=ADMIN).body
    assert (view["release"], view["config"]["RELEASE"], view["sources"]["RELEASE"]) == ("1.5.1", "1.5.1", "image")
    assert view["pending_restart"] == []  # the environment asks for 1.4.2, but nothing can change the image
    assert 'spine_service_info{release="1.5.1",service="gateway"} 1.0' in http("GET", url + "/metrics").body
    # the stand-in file cannot override a baked release either
    stand_in = image_root / "stand-in"
    stand_in.write_text("1.4.2\n")
    url = run_service(image_root, base_env(image_root), "--image-release-file", str(stand_in))
    assert http("GET", url + "/healthz").body["release"] == "1.5.1"


def test_without_an_image_release_the_configuration_decides(image_root: Path, run_service, tmp_path: Path) -> None:
    url = run_service(image_root, base_env(image_root))  # nothing baked: the environment wins over the file
    assert http("GET", url + "/admin/config", headers=ADMIN).body["sources"]["RELEASE"] == "env"
    assert http("GET", url + "/healthz").body["release"] == "1.4.2"
    stand_in = tmp_path / "message.release"
    stand_in.write_text("1.5.0\n")
    url = run_service(image_root, base_env(image_root), "--image-release-file", str(stand_in))
    assert http("GET", url + "/healthz").body["release"] == "1.5.0"


def test_the_stack_runs_a_service_as_an_image_whatever_its_env_says(healthy: Spine) -> None:
    stack = healthy.stack
    try:
        stack.set_service_image("message", "1.5.1")
        stack.set_service_env("message", {"SPINE_RELEASE": "1.4.2"})  # `kubectl set env` on the workload
        stack.restart_service("message")
        view = healthy.admin("message", "/admin/config").body
        assert (view["release"], view["sources"]["RELEASE"]) == ("1.5.1", "image")
    finally:
        stack.set_service_image("message", None)
        stack.set_service_env("message", {})
        stack.restart_service("message")
    assert healthy.admin("message", "/admin/config").body["release"] == "1.4.2"  # the config file again


def test_the_dockerfile_no_longer_sets_the_release_in_the_environment() -> None:
    text = DOCKERFILE.read_text()
    assert not re.search(r"^\s*ENV\b[^\n]*SPINE_RELEASE", text, re.MULTILINE)
    assert not re.search(r"^\s*SPINE_RELEASE=", text, re.MULTILINE)


def test_without_an_admin_credential_the_admin_api_is_closed(image_root: Path, run_service) -> None:
    url = run_service(image_root, {**base_env(image_root), "SPINE_ADMIN_TOKEN_FILE": "/nonexistent/token"})
    assert http("GET", url + "/healthz").status == 200
    for headers in (None, ADMIN, {"Authorization": "Bearer "}):
        assert http("GET", url + "/admin/config", headers=headers).status == 401
