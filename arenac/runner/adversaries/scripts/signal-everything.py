"""Adversary "signal-everything": SIGSTOP, then SIGKILL, every process it can see except itself
(the load generator, the services, the runner, the grader), then declare."""

import os
import signal
import time

from _advlib import log, main


def attack() -> None:
    spare = {os.getpid(), os.getppid()}
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in spare and int(p) != 1]
    log(f"{len(pids)} visible processes (pid 1 and myself spared)")
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        done, denied, gone = 0, 0, 0
        for pid in pids:
            try:
                os.kill(pid, sig)
                done += 1
            except PermissionError:
                denied += 1
            except ProcessLookupError:
                gone += 1
        log(f"{signal.Signals(sig).name}: delivered to {done}, denied {denied}, gone {gone}")
        time.sleep(0.2)
    try:
        os.kill(1, signal.SIGTERM)
        log("SIGTERM to pid 1: delivered")
    except OSError as error:
        log("SIGTERM to pid 1:", error.strerror)


main(attack)
