"""One episode in a process of its own: the unit that lifetime.py binds to the kernel.

Contract:
- `run_in_worker(bundle_dir, options, stop, cgroups)` starts `python -m arenac.runner.worker`,
  moves it into a fresh episode cgroup (when `cgroups` is given) before it starts anything, then
  sends it a `WorkerRequest` on its standard input; the worker opens the bundle (with the same
  checks as the runner's), runs the episode (trial.run_episode; with `options.cluster`, the trial
  on that cluster: kube/cluster_trial.run_cluster_trial) and sends back its
  `EpisodeResult` on a pipe. The caller's `stop` (Ctrl-C, SIGTERM) reaches the worker as SIGTERM,
  and the worker tears its episode down as an in-process one would.
- Whatever way the worker ends, its cgroup is killed and removed afterwards: a worker that died
  (killed, crashed) leaves nothing running, and its episode is an infra_error naming the signal
  or exit code, or "interrupted" when the caller's stop ended it (`lost_result_reason`). The
  worker's standard error is the runner's (warnings and the progress line reach the terminal).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

from arenac.runner.bundle import BundleRefused, open_bundle
from arenac.runner.lifetime import RunnerCgroups
from arenac.runner.options import EpisodeOptions, EpisodeResult
from arenac.runner.records import record_infra_error
from arenac.runner.trial import run_episode
from arenac.runner.watch import process_stopped

# after a stop, how long a worker may take to tear down before it is killed (a stack stops in
# well under this; the grace covers a loaded machine)
TEARDOWN_GRACE_S = 90.0
STOPPED_GRACE_S = 5.0


class WorkerRequest(BaseModel):
    bundle: Path
    options: EpisodeOptions


_RESULT = TypeAdapter(EpisodeResult)


def run_in_worker(bundle_dir: Path, options: EpisodeOptions, stop: threading.Event,
                  cgroups: RunnerCgroups | None, bound_reason: str = "") -> EpisodeResult:
    started = time.monotonic()
    cgroup = cgroups.episode(options.out.name) if cgroups is not None else None
    options = replace(options, bound_by="cgroup" if cgroup is not None else f"process records ({bound_reason})",
                      cgroup=cgroup.path if cgroup is not None else None)
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen([sys.executable, "-m", "arenac.runner.worker", str(write_end)],
                                   stdin=subprocess.PIPE, pass_fds=(write_end,), start_new_session=True)
    except BaseException:
        os.close(read_end)
        if cgroup is not None:
            cgroup.kill()
        raise
    finally:
        os.close(write_end)
    try:
        if cgroup is not None:
            cgroup.adopt(process.pid)  # before the request: the worker has started nothing yet
        assert process.stdin is not None
        process.stdin.write(WorkerRequest(bundle=bundle_dir, options=options).model_dump_json().encode())
        process.stdin.close()
        killed_because = _wait(process, stop)
        if cgroup is not None:
            cgroup.kill()  # what the worker left, before reading: nothing may hold the pipe open
        with os.fdopen(read_end, "rb") as result_pipe:
            read_end = -1
            payload = result_pipe.read()
    finally:
        if read_end >= 0:
            os.close(read_end)
        if process.poll() is None:
            process.kill()
            process.wait()
        if cgroup is not None:
            cgroup.kill()  # whatever the worker left (nothing, when it tore down itself)
    if process.returncode == 0 and payload:
        return _RESULT.validate_json(payload)
    how = killed_because or (f"signal {signal.Signals(-process.returncode).name}" if process.returncode < 0
                             else f"exit code {process.returncode}")
    print(f"arenac: the episode worker ended without a result ({how}): {options.out}", file=sys.stderr)
    reason = lost_result_reason(how, stop.is_set())
    record_infra_error(options.out, reason, options.time_scale)
    return EpisodeResult(options.out, "infra_error", 0, False, False, round(time.monotonic() - started, 2), reason)


def lost_result_reason(how: str, stopped: bool) -> str:
    """Why an episode whose worker sent no result is an infra_error. After the runner's own stop it
    is "interrupted", whatever the worker had reached (a worker still starting dies of the SIGTERM
    before its episode can record the interruption itself), so that a resumed qualification or
    campaign runs it again (resume.py, retry.py); otherwise the worker's end, `how`."""
    return "interrupted" if stopped else f"the episode worker ended without a result ({how})"


def _wait(process: subprocess.Popen[bytes], stop: threading.Event) -> str:
    """Wait for the worker; returns why it was killed ("" when it ended by itself)."""
    stopping_since = stopped_since = None
    while process.poll() is None:
        if stop.is_set() and stopping_since is None:
            process.send_signal(signal.SIGTERM)
            stopping_since = time.monotonic()
        if stopping_since is not None and time.monotonic() - stopping_since > TEARDOWN_GRACE_S:
            process.kill()
            return f"it did not tear down within {TEARDOWN_GRACE_S:g} s of the stop"
        if process_stopped(process.pid):  # SIGSTOP: it would never end by itself
            stopped_since = stopped_since or time.monotonic()
            if time.monotonic() - stopped_since > STOPPED_GRACE_S:
                process.kill()
                return f"it was stopped (SIGSTOP) for {STOPPED_GRACE_S:g} s"
        else:
            stopped_since = None
        try:
            process.wait(0.2)
        except subprocess.TimeoutExpired:
            pass
    return ""


def main(argv: list[str]) -> int:
    result_fd = int(argv[0])
    os.set_inheritable(result_fd, False)  # the episode's own children never hold the result pipe
    request = WorkerRequest.model_validate_json(sys.stdin.buffer.read())
    stop = threading.Event()

    def handler(_signum, _frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)

    try:
        bundle = open_bundle(request.bundle)
    except BundleRefused as error:  # changed since the runner checked it
        print(f"arenac: refusing to run: {error}", file=sys.stderr)
        return 3
    if request.options.cluster is not None:  # the trial runs on a cluster; this process drives it
        from arenac.runner.kube.cluster_trial import run_cluster_trial  # only a cluster's trial needs it

        result = run_cluster_trial(bundle, request.options, stop)
    else:
        result = run_episode(bundle, request.options, stop)
    with os.fdopen(result_fd, "wb") as out:
        out.write(json.dumps(_RESULT.dump_python(result, mode="json")).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
