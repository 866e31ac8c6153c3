"""A compose network played without Docker: two network namespaces, `harness` and `main`, joined by
a veth pair, as compose's default network joins two services' containers.

Each side has its own loopback, so what a service binds to 127.0.0.1 is out of the other's reach, as
between two containers; `harness` resolves to the harness side's address on the main side (a hosts
file bind-mounted over /etc/hosts in a private mount namespace, as Docker's embedded DNS would answer).
Needs root, iproute2's `ip` and util-linux (`nsenter`, `unshare`, `setpriv`); `PlayNetwork.missing()`
says what is absent so that a test can skip with the reason. Names carry the test process's PID, and
`down()` deletes both namespaces (their veth ends go with them): a test leaves no interface behind.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUBNET = "10.231.{n}.{host}"
HARNESS_HOST, MAIN_HOST = 1, 2


@dataclass
class PlayNetwork:
    """Namespaces `<prefix>h` and `<prefix>m`; the harness side is `harness_address`."""

    prefix: str
    n: int = 0  # the /30's third octet

    @classmethod
    def for_this_process(cls) -> PlayNetwork:
        pid = os.getpid()
        return cls(prefix=f"ap{pid % 100000}", n=pid % 250)

    @staticmethod
    def missing() -> str | None:
        """Why the network cannot be played here, or None."""
        if os.geteuid() != 0:
            return "playing a compose network needs root (network namespaces)"
        absent = [tool for tool in ("ip", "nsenter", "unshare", "setpriv") if shutil.which(tool) is None]
        return f"playing a compose network needs {', '.join(absent)}" if absent else None

    @property
    def harness_ns(self) -> str:
        return f"{self.prefix}h"

    @property
    def main_ns(self) -> str:
        return f"{self.prefix}m"

    @property
    def harness_address(self) -> str:
        return SUBNET.format(n=self.n, host=HARNESS_HOST)

    def up(self) -> PlayNetwork:
        veth_h, veth_m = f"{self.prefix}vh", f"{self.prefix}vm"
        commands = [
            ["ip", "netns", "add", self.harness_ns],
            ["ip", "netns", "add", self.main_ns],
            ["ip", "link", "add", veth_h, "type", "veth", "peer", "name", veth_m],
            ["ip", "link", "set", veth_h, "netns", self.harness_ns],
            ["ip", "link", "set", veth_m, "netns", self.main_ns],
            ["ip", "-n", self.harness_ns, "addr", "add", f"{self.harness_address}/30", "dev", veth_h],
            ["ip", "-n", self.main_ns, "addr", "add", f"{SUBNET.format(n=self.n, host=MAIN_HOST)}/30", "dev", veth_m],
        ]
        for ns, veth in ((self.harness_ns, veth_h), (self.main_ns, veth_m)):
            commands += [["ip", "-n", ns, "link", "set", "lo", "up"], ["ip", "-n", ns, "link", "set", veth, "up"]]
        try:
            for command in commands:
                subprocess.run(command, check=True, capture_output=True, timeout=30)
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        for ns in (self.harness_ns, self.main_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def command(self, side: str, argv: list[str], *, binds: dict[Path, str] | None = None,
                user: tuple[int, int] | None = None, env: dict[str, str] | None = None) -> list[str]:
        """ARGV run on SIDE ("harness" or "main") in a private mount namespace, with each host path
        of BINDS mounted over its path there (the main side also gets a hosts file naming `harness`),
        as USER (uid, gid; None: root) with exactly ENV."""
        ns = self.harness_ns if side == "harness" else self.main_ns
        mounts = dict(binds or {})
        script = []
        for source, target in mounts.items():
            script.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(target)}")
        drop = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"] if user else []
        script.append("exec " + shlex.join([*drop, "env", "-i", *(f"{k}={v}" for k, v in (env or {}).items()),
                                            *argv]))
        return ["nsenter", f"--net=/run/netns/{ns}", "--", "unshare", "--mount", "--propagation", "private", "--",
                "sh", "-c", " && ".join(script)]

    def hosts_file(self, directory: Path) -> Path:
        """The main side's /etc/hosts: itself, and `harness` at the harness side's address."""
        path = directory / "hosts"
        path.write_text(f"127.0.0.1\tlocalhost\n{self.harness_address}\tharness\n")
        path.chmod(0o644)
        return path
