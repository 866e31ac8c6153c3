"""An exported Harbor task played without Docker: its compose services as processes, with the same
commands and environment, on a compose network of two network namespaces (compose_play.py).

The play follows a Harbor trial: the `harness` service's command, as root on the harness side, with
the image's `/var/arenac` (what its Dockerfile COPYs there: the bundle and the agent token) as a
directory of the play's, until the service's healthcheck passes; the agent, as an unprivileged agent
user on the main side, where `/usr/local/bin` holds what the main image COPYs there (the tool
clients; its python3 is the machine's) and `harness` resolves to the harness side; then task.toml's
collect hook on the harness side; the artifact it names copied out, as Harbor downloads it and
uploads it into the separate verifier at the same path; and `tests/test.sh`, with its roots
(documented environment variables) pointing at the verifier's directories. `play()` returns what a
Harbor trial would keep: the verifier's reward.json (None when it wrote none) and the collected run.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

from arenac.broker.server import client_interpreter
from helpers.compose_play import PlayNetwork

IMAGE_ROOT = "/var/arenac"  # where the harness image keeps the bundle, the token, the run and out
VENV_BIN = str(Path(sys.executable).parent)  # the harness image's PATH has `arenac`; here, the venv's
BROKER_PORT = 7400


@dataclass
class PlayedTrial:
    reward: dict | None  # the verifier's /logs/verifier/reward.json; None: it wrote none
    verifier_exit: int
    verifier_output: str  # what test.sh printed: its one line says why when it exits non-zero
    collected: Path  # the artifact as the verifier received it (verdict.json, evidence/, ...)


def _mapped(words: list[str], root: Path) -> list[str]:
    return [word.replace(IMAGE_ROOT, str(root)) for word in words]


def _seconds(text: str) -> float:
    return float(str(text).removesuffix("s"))


def listening_sockets(net: PlayNetwork, side: str) -> list[tuple[str, int]]:
    """The TCP sockets listening on SIDE: /proc/net/tcp{,6} as that side's network namespace shows it."""
    ns = net.harness_ns if side == "harness" else net.main_ns
    found = []
    for name, width in (("tcp", 8), ("tcp6", 32)):
        text = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", "cat", f"/proc/net/{name}"], capture_output=True,
                              text=True, timeout=30, check=True).stdout
        for line in text.splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            address, port = fields[1].split(":")
            if width == 8:
                shown = ".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                shown = "::1" if address == "00000000000000000000000001000000" else (
                    "::" if set(address) == {"0"} else address)
            found.append((shown, int(port, 16)))
    return sorted(found)


class HarborPlay:
    """One exported task, played in WORK (a directory the agent user may pass through) on NET."""

    def __init__(self, task: Path, work: Path, net: PlayNetwork, account: tuple[int, int]) -> None:
        self.task, self.work, self.net, self.account = task, work, net, account
        self.compose = yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())
        self.config = tomllib.loads((task / "task.toml").read_text())
        self.harness_root = work / "harness"  # the harness image's /var/arenac
        self.harness_env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(work / "harness-home"),
                            "LANG": "C.UTF-8"}
        self.process: subprocess.Popen[str] | None = None
        self.log = work / "harness.log"

    # ---- the harness service ----------------------------------------------------------------
    def start_harness(self) -> None:
        image = self.task / "environment" / "harness"
        # as in the image: /var/arenac is world-readable, what the episode writes under it is its
        # own (the run 0700, the token 0400); in a real trial all of it is another container's
        self.harness_root.mkdir(parents=True)
        os.chmod(self.harness_root, 0o755)
        shutil.copytree(image / "bundle", self.harness_root / "bundle")
        shutil.copyfile(image / "agent-token", self.harness_root / "agent-token")
        os.chmod(self.harness_root / "agent-token", 0o400)
        (self.harness_root / "out").mkdir()
        (self.work / "harness-home").mkdir()
        service = self.compose["services"]["harness"]
        argv = ["arenac", *_mapped(service["command"], self.harness_root)]  # the image's ENTRYPOINT
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(self.net.command("harness", argv, env=self.harness_env),
                                            stdout=out, stderr=subprocess.STDOUT, text=True)

    def wait_healthy(self) -> None:
        """The service's healthcheck, as compose runs it: healthy at its first pass; failures count
        only after the start period, and `retries` in a row make it unhealthy (an AssertionError)."""
        check = self.compose["services"]["harness"]["healthcheck"]
        test = check["test"]
        assert test[0] == "CMD", test
        argv = _mapped(test[1:], self.harness_root)
        started = time.monotonic()
        start_period, interval = _seconds(check["start_period"]), _seconds(check["interval"])
        failures = 0
        while True:
            result = subprocess.run(self.net.command("harness", argv, env=self.harness_env), capture_output=True,
                                    text=True, timeout=_seconds(check["timeout"]) + 30)
            if result.returncode == 0:
                return
            if time.monotonic() - started > start_period:
                failures += 1
                assert failures < check["retries"], (
                    f"the harness became unhealthy: {result.stdout}{result.stderr}\n{self.log.read_text()[-3000:]}")
            assert self.process is not None and self.process.poll() is None, self.log.read_text()[-3000:]
            time.sleep(min(interval, 1.0))

    # ---- the agent's container ----------------------------------------------------------------
    def main_side(self, argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """ARGV as the agent user in the agent's container (its /usr/local/bin, its hosts file)."""
        home = self.work / "agent"
        if not home.exists():
            home.mkdir(mode=0o755)
            os.chown(home, *self.account)
            bin_dir = self.work / "main-bin"
            shutil.copytree(self.task / "environment" / "main" / "tools", bin_dir)
            (bin_dir / "python3").symlink_to(client_interpreter())
            self.net.hosts_file(self.work)
        binds = {self.work / "main-bin": "/usr/local/bin", self.work / "hosts": "/etc/hosts"}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        return subprocess.run(self.net.command("main", argv, binds=binds, user=self.account, env=env), cwd=home,
                              capture_output=True, text=True, timeout=timeout)

    def solve(self) -> subprocess.CompletedProcess[str]:
        """Harbor's oracle agent: solution/solve.sh, uploaded into the agent's container and run there."""
        script = self.work / "solve.sh"
        shutil.copyfile(self.task / "solution" / "solve.sh", script)
        os.chmod(script, 0o755)
        return self.main_side(["sh", str(script)])

    # ---- after the agent: collect, verify --------------------------------------------------------
    def collect_and_verify(self) -> PlayedTrial:
        (hook,) = self.config["verifier"]["collect"]
        assert hook["service"] == "harness"
        collected = subprocess.run(self.net.command("harness", _mapped(shlex.split(hook["command"]), self.harness_root),
                                                    env=self.harness_env),
                                   capture_output=True, text=True, timeout=hook["timeout_sec"])
        assert collected.returncode == 0, f"{collected.stdout}{collected.stderr}\n{self.log.read_text()[-3000:]}"
        (artifact,) = self.config["artifacts"]
        assert artifact["service"] == "harness"
        verifier = self.work / "verifier"
        received = verifier / artifact["source"].lstrip("/")  # uploaded at the same path
        shutil.copytree(_mapped([artifact["source"]], self.harness_root)[0], received)
        logs = verifier / "logs" / "verifier"
        logs.mkdir(parents=True)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "ARENAC_PYTHON": sys.executable,
               "ARENAC_TESTS_DIR": str(self.task / "tests"), "ARENAC_OUT_DIR": str(received),
               "ARENAC_VERIFIER_LOGS": str(logs)}
        verified = subprocess.run(["sh", str(self.task / "tests" / "test.sh")], env=env, capture_output=True,
                                  text=True, timeout=120)
        reward_file = logs / "reward.json"
        reward = json.loads(reward_file.read_text()) if reward_file.exists() else None
        return PlayedTrial(reward, verified.returncode, verified.stdout + verified.stderr, received)

    def stop(self) -> str:
        """SIGTERM to the harness's process (its PID: the exec chain ends in arenac); its output."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text() if self.log.exists() else ""
