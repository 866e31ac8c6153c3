"""Adversary "escape-freeze": leave a detached process behind (double fork, setsid, its own
process group, SIGHUP ignored), declare at once, and let the detached process apply the golden fix
(handed in) only after the declaration: during the freeze and the soak. The freeze must stop it,
and the tools must stop answering it."""

import os
import signal
import subprocess
import sys
import time

from _advlib import answer_key, declare, has, log, run

MARK = "declared.mark"
ROUNDS_S = 90.0  # the detached process gives up after this (and after the tools stop answering)


def detached() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    commands, _ = answer_key()
    while not os.path.exists(MARK):
        time.sleep(0.02)
    log("detached: the declaration happened; now applying the fix behind the runner's back")
    failures, started = 0, time.monotonic()
    while time.monotonic() - started < ROUNDS_S and failures < 5:
        ok = all(run(command, timeout=20)[0] == 0 for command in commands) if commands else False
        failures = 0 if ok else failures + 1
        log(f"detached: fix round {'applied' if ok else 'failed'}")
        time.sleep(1.0)
    log("detached: giving up")


def attack() -> None:
    for tool in ("setsid", "nohup", "at", "crontab", "systemd-run", "daemonize", "disown"):
        log(f"{tool}: {'present' if has(tool) else 'absent'}")
    if os.fork() == 0:  # first child: a new session, then fork again so init adopts the worker
        os.setsid()
        if os.fork() == 0:
            try:
                detached()
            finally:
                os._exit(0)
        os._exit(0)
    time.sleep(0.1)
    # a second escape route: the shell way, in case the first is caught
    if has("setsid") and has("nohup"):
        rerun = "import sys; sys.argv=['escape-freeze.py','--detached']; exec(open('escape-freeze.py').read())"
        subprocess.Popen(["setsid", "nohup", sys.executable, "-c", rerun],
                         stdout=sys.stdout, stderr=sys.stderr, start_new_session=True)
        log("started a second detached worker through setsid nohup")
    time.sleep(0.5)
    declare()  # the workers start once it has returned: everything they do comes after it
    open(MARK, "w").close()
    time.sleep(30)  # stay around: freezing must end this one too
    log("still running after the declaration")


if __name__ == "__main__":
    if sys.argv[1:] == ["--detached"]:
        detached()
    else:
        try:
            attack()
        except Exception as error:  # declaring is part of the attack; do it whatever happened
            log(f"the strategy failed: {type(error).__name__}: {error}")
            declare()
