"""`arenac harness episode | status | finish`: one episode with an external agent, as a Harbor task's
`harness` container runs it (docs/harness.md, "The harness as one container (Harbor)"). The work is
arenac/runner/external_agent.py's (the episode) and external_control.py's (status.json, the finish
request, collecting the run). Registered in the `harness` group (cli/harness.py).

  episode  BUNDLE --listen HOST:PORT --token-file FILE --run-dir DIR [--time-scale S]
           [--target-namespace NS [--credentials DIR]] [--healthy]
           runs the episode in the foreground, then stays idle until SIGTERM or SIGINT. With
           --target-namespace, against the substrate a chart installed in NS on the cluster this
           runs in (the harness pod: runner/kube/pod_backend.py), the substrate's credentials
           mounted as files under --credentials ($ARENAC_CREDENTIALS); without, it starts the
           substrate as local processes. --healthy: the healthy control, no fault injected (on a
           cluster the runner installed the chart without the faults' overlay: install.py).
           Exit 0 after a graded episode (whatever its trial status; or interrupted and graded),
           1 when the episode could not run or was not graded, 2 a mistake in the input.
  status   --run-dir DIR [--handed-over]
           with --handed-over: 0 the agent's doors are open (or were), 1 not yet (or no episode
           has started there yet), 2 the episode ended before the handover, or DIR holds no status
           of ours. Without: prints status.json, 0; 2 when there is none.
  finish   --run-dir DIR --out OUT [--timeout SECONDS]
           ends the agent's phase, waits for the grade, copies the run into OUT; prints one JSON
           line (status, reward, out). 0 the episode has a result; 1 no grade within the timeout,
           or the episode ended without one; 2 no episode at DIR, or OUT cannot be written.

Messages are one line on stderr, `arenac harness COMMAND: ...`; never a traceback.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import NoReturn

import click

EXIT_FAILED = 1
EXIT_INPUT = 2
FINISH_POLL_S = 0.5
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS-1123 label, as Kubernetes names one


def _fail(command: str, message: str, code: int) -> NoReturn:
    click.echo(f"arenac harness {command}: {message}", err=True)
    sys.exit(code)


def _listen_address(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{value!r}: use HOST:PORT (0.0.0.0:7400 in a container)")
    return host, int(port)


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        _fail("episode", f"--token-file {path}: cannot read it: {getattr(error, 'strerror', None) or error}",
              EXIT_INPUT)
    if not token or any(c.isspace() for c in token):
        _fail("episode", f"--token-file {path}: the token must be one non-empty word", EXIT_INPUT)
    return token


def _check_listen(host: str, port: int) -> None:
    """Bind once before anything starts: a port taken or an address not of this machine is the
    caller's mistake, said now rather than as an infra_error at the handover minutes later."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(infos[0][4])
    except OSError as error:
        _fail("episode", f"--listen {host}:{port}: cannot listen there: {error.strerror or error}", EXIT_INPUT)


@click.command()
@click.argument("bundle", type=click.Path(file_okay=False, path_type=Path))
@click.option("--listen", required=True, callback=_listen_address, metavar="HOST:PORT",
              help="Where the broker listens for the agent's tool clients (TCP).")
@click.option("--token-file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The broker's token (the tool clients carry it), one word.")
@click.option("--run-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The control directory (mode 0700): status.json, the finish request, run/.")
@click.option("--time-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Plan seconds are this many real seconds.")
@click.option("--target-namespace", metavar="NS", default=None,
              help="Run against the substrate a chart installed in this namespace of the cluster (in a pod).")
@click.option("--credentials", type=click.Path(file_okay=False, path_type=Path), default="/etc/arenac/credentials",
              envvar="ARENAC_CREDENTIALS", show_default=True,
              help="With --target-namespace: the substrate's Secrets' keys, mounted as files.")
@click.option("--healthy", is_flag=True,
              help="The healthy control: inject no fault (on a cluster, the chart was installed without them).")
def episode(bundle: Path, listen: tuple[str, int], token_file: Path, run_dir: Path, time_scale: float,
            target_namespace: str | None, credentials: Path, healthy: bool) -> None:
    """Run one episode of BUNDLE for an external agent, then stay idle until SIGTERM."""
    from arenac.runner.bundle import BundleRefused, open_bundle
    from arenac.runner.external_control import Control, ControlError, process_alive

    given = click.get_current_context().get_parameter_source("credentials") == click.core.ParameterSource.COMMANDLINE
    if given and target_namespace is None:  # the local backend makes its own credentials: a mistake, said
        _fail("episode", "--credentials goes with --target-namespace (the substrate on a cluster)", EXIT_INPUT)
    token = _read_token(token_file)
    try:
        opened = open_bundle(bundle)
    except BundleRefused as error:
        _fail("episode", str(error), EXIT_INPUT)
    cluster = _cluster_target(opened, target_namespace, credentials) if target_namespace is not None else None
    control = Control(run_dir)
    try:
        control.create()
        earlier = control.read() if control.status_path.exists() else None
    except ControlError:
        earlier = None  # not ours: replaced
    except OSError as error:
        _fail("episode", f"--run-dir {run_dir}: cannot make it: {error.strerror or error}", EXIT_INPUT)
    if earlier is not None and earlier.phase != "ended" and process_alive(earlier.pid):
        _fail("episode", f"--run-dir {run_dir}: the episode of process {earlier.pid} runs there", EXIT_INPUT)
    _check_listen(*listen)
    (run_dir / "finish.request").unlink(missing_ok=True)  # an earlier episode's request is not this one's
    _run(opened, control, listen, token, time_scale, cluster, healthy)


def _cluster_target(bundle, namespace: str, credentials: Path):
    """The cluster backend's target, every part checked before anything starts: the namespace's
    name, the credentials (read and enough for the substrate's endpoints), the API client's config."""
    import importlib.util

    if not NAMESPACE.fullmatch(namespace):
        _fail("episode", f"--target-namespace {namespace!r}: not a namespace's name (a DNS-1123 label: "
                         "lower-case letters, digits and '-', at most 63)", EXIT_INPUT)
    if importlib.util.find_spec("kubernetes") is None:
        _fail("episode", "--target-namespace needs the Kubernetes client: pip install 'arenac[kubernetes]'",
              EXIT_INPUT)
    from arenac.runner.harness_commands import HarnessInputError, read_credentials
    from arenac.runner.kube.api import KubeError
    from arenac.runner.kube.pod_backend import ClusterTarget, in_cluster_api
    from arenac.substrate.interface import EndpointsError
    from arenac.substrate.registry import driver_for

    try:
        driver_for(bundle.plan.substrate).cluster_endpoints(namespace, read_credentials(credentials))
    except HarnessInputError as error:
        _fail("episode", str(error), EXIT_INPUT)
    except EndpointsError as error:
        _fail("episode", f"--credentials {credentials}: {error}", EXIT_INPUT)
    try:
        in_cluster_api().close()  # the configuration only: nothing is asked of the API server yet
    except KubeError as error:
        _fail("episode", f"--target-namespace {namespace}: no Kubernetes API to use: {error}", EXIT_INPUT)
    return ClusterTarget(namespace=namespace, credentials=credentials, connect=in_cluster_api)


def _run(bundle, control, listen: tuple[str, int], token: str, time_scale: float, cluster=None,
         healthy: bool = False) -> None:
    from arenac.runner.external_agent import StatusBoard, run_external_episode

    stop, signalled = threading.Event(), threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        click.echo(f"arenac harness episode: {signal.Signals(signum).name}: stopping", err=True)
        signalled.set()
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    board = StatusBoard(control)
    board.update("provisioning")
    try:
        result = run_external_episode(bundle, control, board, listen, token, time_scale, stop, cluster=cluster,
                                      inject_faults=not healthy)
    except Exception as error:  # the harness's own failure: said in one line and in status.json
        reason = f"{type(error).__name__}: {error}"
        board.update("ended", reason=reason)
        _fail("episode", f"the episode could not run: {reason}", EXIT_FAILED)
    click.echo(json.dumps({"out": str(result.out), "reason": result.reason, "reward": result.reward,
                           "status": result.status}, sort_keys=True))
    sys.stdout.flush()
    graded = board.status.phase == "graded"
    signalled.wait()  # a compose service that exits would be restarted, or counted as failed
    board.update("ended")
    if not graded:
        _fail("episode", f"the episode was not graded: {result.reason}", EXIT_FAILED)


@click.command()
@click.option("--run-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The episode's control directory (as given to `episode`).")
@click.option("--handed-over", is_flag=True,
              help="Exit 0 once the agent's doors opened, 1 before, 2 if the episode ended before them.")
def status(run_dir: Path, handed_over: bool) -> None:
    """The episode's status: a compose healthcheck with --handed-over."""
    from arenac.runner.external_control import Control, ControlError, handover_state

    control = Control(run_dir)
    if handed_over and not control.status_path.exists():
        _fail("status", f"no episode has started at {run_dir} yet", EXIT_FAILED)
    try:
        current = control.read()
    except ControlError as error:
        _fail("status", str(error), EXIT_INPUT)
    if not handed_over:
        click.echo(current.model_dump_json(exclude_none=True))
        return
    state = handover_state(current)
    if state == "handed_over":
        click.echo(f"handed over (phase {current.phase})")
    elif state == "not_yet":
        _fail("status", f"not handed over yet (phase {current.phase})", EXIT_FAILED)
    else:
        why = current.trial_status or "ended"
        _fail("status", f"the episode ended before the handover: {why}: "
                        f"{current.reason or 'its process is gone'}", EXIT_INPUT)


@click.command()
@click.option("--run-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The episode's control directory (as given to `episode`).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where to copy verdict.json, reward.json, run.json, events.jsonl, actions.jsonl, evidence/.")
@click.option("--timeout", type=click.FloatRange(min=0), default=1800.0, show_default=True,
              help="Real seconds to wait for the grade (the soak and challenges run first).")
def finish(run_dir: Path, out: Path, timeout: float) -> None:
    """End the agent's phase, wait for the grade and copy the run into OUT."""
    from arenac.runner.external_control import Control, ControlError, collect, process_alive

    control = Control(run_dir)
    try:
        current = control.read()
        if not current.has_result and current.phase != "ended":
            control.request_finish()
    except ControlError as error:
        _fail("finish", str(error), EXIT_INPUT)
    deadline = time.monotonic() + timeout
    while not current.has_result:
        if current.phase == "ended" or not process_alive(current.pid):
            _fail("finish", f"the episode ended without a grade: {current.reason or 'its process is gone'}",
                  EXIT_FAILED)
        if time.monotonic() >= deadline:
            _fail("finish", f"no grade within {timeout:g} s (phase {current.phase})", EXIT_FAILED)
        time.sleep(FINISH_POLL_S)
        try:
            current = control.read()
        except ControlError as error:
            _fail("finish", str(error), EXIT_INPUT)
    try:
        collect(control, out)
    except OSError as error:
        _fail("finish", f"--out {out}: cannot copy the run there: {error.strerror or error}", EXIT_INPUT)
    click.echo(json.dumps({"out": str(out), "reward": current.reward, "status": current.trial_status},
                          sort_keys=True))
