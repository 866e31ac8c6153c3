"""The timer-lateness sampler of the headroom probe: `python -I -S headroom_sampler.py INTERVAL_S`.

Contract: sleeps INTERVAL_S real seconds in a loop and prints, one line per wake-up, how late it woke
(integer microseconds; negative never happens on Linux but is printed as measured). It exits on
SIGTERM, when its standard output is closed, or when its parent is gone. A process of its own
(headroom.py says why), run by file name without site-packages, so the standard library only: it
starts in milliseconds and costs nothing.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def sample(interval_s: float) -> int:
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    out = sys.stdout
    try:
        while os.getppid() == parent:  # orphaned (the episode's process died): nothing reads us
            before = time.monotonic()
            time.sleep(interval_s)
            out.write(f"{round((time.monotonic() - before - interval_s) * 1e6)}\n")
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(sample(float(sys.argv[1])))
