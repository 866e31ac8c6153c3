"""The machine's live-episode lock for tests (what `flock /tmp/arenac-live.lock CMD` takes).

Episodes of other runners on a 2-core machine must not compete with a test's for its cores, so a
test's live part takes the lock; when a process above the test already holds it (a whole CI job or
test run started under `flock`), the test runs under that hold instead of waiting for itself.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

LIVE_LOCK = Path(os.environ.get("ARENAC_LIVE_LOCK", "/tmp/arenac-live.lock"))


def held_by_an_ancestor(path: Path = LIVE_LOCK) -> bool:
    """Whether a process above this one holds a flock on `path` (/proc/locks names its PID)."""
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return False
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    holders = {int(line.split()[4]) for line in locks
               if "->" not in line and " FLOCK " in line and line.split()[5] == inode}
    return bool(holders & {p.pid for p in psutil.Process().parents()})


@contextmanager
def live_lock(path: Path = LIVE_LOCK) -> Iterator[None]:
    if held_by_an_ancestor(path):
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # other live work may hold it for minutes: wait
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
