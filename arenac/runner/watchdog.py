"""The runner's watchdog: `python -m arenac.runner.watchdog RUNNER_CGROUP STATE_DIR`.

Contract: started by lifetime.RunnerCgroups.open() in a session of its own, with its standard input
the read end of a pipe that only the runner can write. It waits for end of file, which the kernel
delivers when the runner exits or dies, then kills every process in RUNNER_CGROUP (the runner's
episodes), removes the cgroups, reaps the records and scratch directories of dead runners in
STATE_DIR (state.py), and exits. SIGINT is ignored (a Ctrl-C in the terminal is the runner's to
handle); SIGTERM cleans up at once.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from arenac.runner.lifetime import kill_tree
from arenac.runner.state import StateDir


def _clean(runner_cgroup: Path, state_dir: Path) -> None:
    kill_tree(runner_cgroup)
    StateDir(state_dir).reap()


def main(argv: list[str]) -> int:
    runner_cgroup, state_dir = Path(argv[0]), Path(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_term(*_: object) -> None:
        _clean(runner_cgroup, state_dir)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    while sys.stdin.buffer.read(4096):  # nothing is ever written: this returns b"" when the runner is gone
        pass
    _clean(runner_cgroup, state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
