"""`arenac harness ...`: the episode's harness steps as commands, for the pods of a cluster's harness
namespace (the bundle chart's fault-init Job and load generator run `inject` and `loadgen`; the
rest are for the runner's Kubernetes backend). docs/kubernetes.md, "The harness commands", is the
reference; the work is arenac/runner/harness_commands.py's, with the local episode's own code.

  inject          --plan P (--target-namespace NS | --endpoints F) (--onset KIND | --fault F ...)
  trigger         --plan P (--target-namespace NS | --endpoints F) --fault F [--recur]
  snapshot        --plan P (--target-namespace NS | --endpoints F) --label L
  acked           --plan P (--target-namespace NS | --endpoints F) --label soak_end|after_restart
  sample          --plan P (--target-namespace NS | --endpoints F) [--wait-s S] [--duration-s D]
  loadgen         --plan P --target URL --time-scale S [--duration-s D]
  serve-evidence  [--dir D] [--host H] [--port N]
  episode | status | finish   one episode with an external agent (a Harbor task's harness
                  container): cli/harness_episode.py, whose exit codes are its own

Every command but serve-evidence takes `--run-dir` (default /var/arenac/run, what the chart's
grader grades) and writes the local run directory's files there; the ones with hands on the
substrate take `--credentials DIR` (the substrate's Secrets mounted as files; default
/etc/arenac/credentials). Each prints one JSON object a line on stdout for what it did. Exit codes:
0 done; 1 the substrate refused or could not be reached (an action, a read or the load's setup
failed: said on stderr in one line, and in the JSON line); 2 a mistake in the command's input (a
plan that is not one, an unknown fault, missing credentials, a run directory it cannot write):
nothing was attempted. Never a traceback. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from arenac.model.plan import Plan
    from arenac.runner.harness_commands import RunDir
    from arenac.runner.harness_io import HarnessIO

EXIT_TARGET = 1
EXIT_INPUT = 2
# the onset kinds of a fault (arenac/model/task.py, Onset.kind: a test keeps the two equal)
ONSET_KINDS = ("at_start", "after", "every", "when", "in_window")
ACKED_LABELS = ("soak_end", "after_restart")
LABEL = re.compile(r"[a-z][a-z0-9_]*")


def _fail(command: str, message: str, code: int) -> NoReturn:
    click.echo(f"arenac harness {command}: {message}", err=True)
    sys.exit(code)


@contextmanager
def _inputs(command: str) -> Iterator[None]:
    """A `HarnessInputError` raised inside is the caller's mistake: one line, exit 2."""
    from arenac.runner.harness_commands import HarnessInputError

    try:
        yield
    except HarnessInputError as error:
        _fail(command, str(error), EXIT_INPUT)


def _emit(record: dict[str, Any]) -> None:
    click.echo(json.dumps(record, sort_keys=True))


def _until_signal(stop: threading.Event, duration_real_s: float | None = None) -> None:
    """Wait for SIGTERM or SIGINT (a pod's end, Ctrl-C), or `duration_real_s`; `stop` is set after."""
    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        stop.wait(duration_real_s)
    finally:
        stop.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ---- options ----------------------------------------------------------------------------------
def _plan_option(function: Any) -> Any:
    return click.option("--plan", "plan_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
                        help="The bundle's plan.json (the chart mounts it at /etc/arenac/plan.json).")(function)


def _run_dir_option(function: Any) -> Any:
    return click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default="/var/arenac/run",
                        envvar="ARENAC_RUN_DIR", show_default=True,
                        help="The run directory: evidence/ in it, the load generator's ready file beside it.")(function)


def _target_options(function: Any) -> Any:
    """Where the harness's hands reach: the substrate in a namespace, or a stack's endpoints file."""
    function = click.option("--endpoints", "endpoints_file", type=click.Path(dir_okay=False, path_type=Path),
                            help="A running stack's endpoints JSON (`arenac substrate up --ready-file`): "
                                 "reach that stack instead of the namespace's.")(function)
    function = click.option("--credentials", type=click.Path(file_okay=False, path_type=Path),
                            default="/etc/arenac/credentials", envvar="ARENAC_CREDENTIALS", show_default=True,
                            help="The substrate's Secrets mounted as files, one per key.")(function)
    return click.option("--target-namespace", "namespace", metavar="NS",
                        help="The application's namespace (its Services are reached by DNS name).")(function)


def _substrate_options(function: Any) -> Any:
    """What every command with hands on the substrate takes: the plan, where the hands reach, the run directory."""
    return _plan_option(_target_options(_run_dir_option(function)))


def _plan(command: str, plan_path: Path) -> Plan:
    from arenac.runner.harness_commands import load_plan

    with _inputs(command):
        return load_plan(plan_path)


def _hands(command: str, plan: Plan, namespace: str | None, credentials: Path, endpoints_file: Path | None,
           run_dir: Path) -> tuple[HarnessIO, RunDir]:
    """The harness's hands on the substrate (close them) and the run directory."""
    from arenac.runner.harness_commands import RunDir, harness_endpoints, open_hands

    with _inputs(command):
        endpoints = harness_endpoints(plan, namespace, credentials, endpoints_file)
    return open_hands(plan, endpoints), RunDir(run_dir)


# ---- the group --------------------------------------------------------------------------------
@click.group()
def harness() -> None:
    """The harness's steps as commands, for a cluster's harness pods (docs/kubernetes.md)."""


def _act(command: str, io: HarnessIO, run: RunDir, steps: list[tuple[tuple[Any, ...], str]]) -> None:
    """Carry out each (actions, what) with the harness's hands, one JSON line each; then, when a
    session was left open on purpose (a leaked lock), hold it until SIGTERM; exit 1 if one failed."""
    from arenac.runner.harness_commands import perform, plan_clock, record_bursts

    clock, source = plan_clock(run)
    failed = []
    for actions, what in steps:
        with _inputs(command):
            record_bursts(io, actions, run, clock)
        outcome = perform(io, actions, what, clock)
        _emit(outcome.record(source))
        if not outcome.ok:
            failed.append(f"{what}: {outcome.error}")
    if failed:
        _fail(command, "; ".join(failed), EXIT_TARGET)
    if io.held_sessions:
        click.echo(f"arenac harness {command}: holding {io.held_sessions} database session(s) open, as the fault "
                   "asks, until SIGTERM", err=True)
        _until_signal(threading.Event())


@harness.command()
@_substrate_options
@click.option("--onset", type=click.Choice(ONSET_KINDS),
              help="Inject the faults the episode fires on this kind of onset (a chart layer's workload "
                   "triggers fire at the handover: at_start).")
@click.option("--fault", "faults", multiple=True, metavar="NAME", help="Inject this fault (repeatable).")
def inject(plan_path: Path, namespace: str | None, credentials: Path, endpoints_file: Path | None, run_dir: Path,
           onset: str | None, faults: tuple[str, ...]) -> None:
    """Inject faults of the plan now: their runtime actions, as the episode's onsets do."""
    from arenac.runner.harness_commands import injections

    plan = _plan("inject", plan_path)
    with _inputs("inject"):
        selected = injections(plan, onset, faults)
    io, run = _hands("inject", plan, namespace, credentials, endpoints_file, run_dir)
    try:
        if not selected:
            click.echo(f"arenac harness inject: no fault of {plan.variant} to inject"
                       + (f" on onset {onset}" if onset else ""), err=True)
        _act("inject", io, run, [(fault.inject, f"inject {fault.name}") for fault in selected])
    finally:
        io.close()


@harness.command()
@_substrate_options
@click.option("--fault", required=True, metavar="NAME", help="The fault to fire again.")
@click.option("--recur", is_flag=True,
              help="Its recurrence after the declaration (its retrigger, else its injection) rather than "
                   "the retrigger challenge.")
def trigger(plan_path: Path, namespace: str | None, credentials: Path, endpoints_file: Path | None, run_dir: Path,
            fault: str, recur: bool) -> None:
    """Fire a fault again: the retrigger challenge, or its recurrence (--recur)."""
    from arenac.runner.harness_commands import fault_named

    plan = _plan("trigger", plan_path)
    with _inputs("trigger"):
        planned = fault_named(plan, fault)
    step = ((planned.retrigger or planned.inject, f"recur {fault}") if recur
            else (planned.retrigger, f"retrigger {fault}"))
    io, run = _hands("trigger", plan, namespace, credentials, endpoints_file, run_dir)
    try:
        _act("trigger", io, run, [step])
    finally:
        io.close()


def _label(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not LABEL.fullmatch(value):
        raise click.BadParameter("lower-case letters, digits and '_', starting with a letter (baseline, "
                                 "agent_start, declaration, soak_end, after_restart, ...)")
    return value


@harness.command()
@_substrate_options
@click.option("--label", required=True, callback=_label,
              help="evidence/snapshots/LABEL.json; `baseline` also records the tables' maximum ids.")
def snapshot(plan_path: Path, namespace: str | None, credentials: Path, endpoints_file: Path | None, run_dir: Path,
             label: str) -> None:
    """Snapshot the substrate's state (config, roles, privileges, Redis, tables) for the safety gate."""
    from arenac.runner.harness_commands import HarnessInputError, plan_clock
    from arenac.runner.harness_commands import snapshot as take

    plan = _plan("snapshot", plan_path)
    io, run = _hands("snapshot", plan, namespace, credentials, endpoints_file, run_dir)
    try:
        clock, source = plan_clock(run)
        with _inputs("snapshot"):
            try:
                path = take(io, plan, run, label, clock)
            except HarnessInputError:
                raise
            except Exception as error:  # the substrate refused a read, or could not be reached
                problem = f"{type(error).__name__}: {error}"
                _emit({"snapshot": label, "ok": False, "error": problem})
                _fail("snapshot", f"cannot take the snapshot {label}: {problem}", EXIT_TARGET)
        _emit({"snapshot": label, "ok": True, "path": str(path), "clock": source})
    finally:
        io.close()


@harness.command()
@_substrate_options
@click.option("--label", required=True, type=click.Choice(ACKED_LABELS), help="evidence/acked_LABEL.json.")
def acked(plan_path: Path, namespace: str | None, credentials: Path, endpoints_file: Path | None, run_dir: Path,
          label: str) -> None:
    """Record what became of every acknowledged write (at soak end, after the restart challenge)."""
    from arenac.runner.harness_commands import plan_clock, record_acked

    io, run = _hands("acked", _plan("acked", plan_path), namespace, credentials, endpoints_file, run_dir)
    try:
        clock, source = plan_clock(run)
        with _inputs("acked"):
            path, unreadable = record_acked(io, run, label, clock)
        # a part it could not read is recorded as such (the checks that need it fail), and said here
        _emit({"acked": label, "ok": not unreadable, "path": str(path), "clock": source,
               **({"unreadable": unreadable} if unreadable else {})})
        if unreadable:
            _fail("acked", f"{path} records unreadable parts: " + "; ".join(f"{part}: {error}" for part, error
                                                                           in unreadable.items()), EXIT_TARGET)
    finally:
        io.close()


@harness.command()
@_substrate_options
@click.option("--wait-s", type=click.FloatRange(min=0), default=120.0, show_default=True,
              help="Real seconds to wait for the load generator's ready file (its clock).")
@click.option("--duration-s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Plan seconds to sample for (default: until SIGTERM).")
def sample(plan_path: Path, namespace: str | None, credentials: Path, endpoints_file: Path | None, run_dir: Path,
           wait_s: float, duration_s: float | None) -> None:
    """Sample the queues' backlog and the periodic jobs' runs about once a plan second."""
    from arenac.runner.harness_commands import sample as take_samples
    from arenac.runner.harness_commands import wait_for_clock

    plan = _plan("sample", plan_path)
    io, run = _hands("sample", plan, namespace, credentials, endpoints_file, run_dir)
    try:
        stop = threading.Event()
        clock = wait_for_clock(run, wait_s, stop)
        if clock is None:
            _fail("sample", f"no load generator's ready file at {run.ready} within {wait_s:g} s: "
                            "the samples are on its clock", EXIT_TARGET)
        watcher = threading.Thread(target=take_samples, args=(io, plan, run, clock, stop), daemon=True)
        with _inputs("sample"):
            run.writable_evidence()
        watcher.start()
        _until_signal(stop, None if duration_s is None else clock.real(duration_s))
        watcher.join(timeout=30)
        _emit({"sampled": [str(run.evidence / "backlog.json"), str(run.evidence / "runs.json")], "ok": True,
               "clock": "loadgen"})
    finally:
        io.close()


@harness.command()
@_plan_option
@_run_dir_option
@click.option("--target", required=True, metavar="URL", help="The substrate's front door (spine: its gateway).")
@click.option("--time-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Plan seconds are this many real seconds.")
@click.option("--duration-s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Plan seconds to run for (default: until SIGTERM).")
def loadgen(plan_path: Path, run_dir: Path, target: str, time_scale: float, duration_s: float | None) -> None:
    """Drive the plan's load against the target, writing the ledger and the acknowledged writes."""
    from arenac.runner.harness_commands import RunDir, run_loadgen

    plan = _plan("loadgen", plan_path)
    with _inputs("loadgen"):
        code = run_loadgen(plan, target, time_scale, RunDir(run_dir), duration_s)
    if code != 0:  # the generator said why on stderr; with a plan's own profile, the target failed its setup
        _fail("loadgen", f"the load generator stopped (exit {code}): see its line above", EXIT_TARGET)
    _emit({"ledger": str(RunDir(run_dir).evidence / "ledger.json"), "ok": True})


@harness.command(name="serve-evidence")
@click.option("--dir", "root", type=click.Path(file_okay=False, path_type=Path), default="/var/arenac/run",
              envvar="ARENAC_RUN_DIR", show_default=True, help="The directory to serve, read-only.")
@click.option("--host", default="0.0.0.0", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="The port (0: any free one; the first line says which).")
def serve_evidence(root: Path, host: str, port: int) -> None:
    """Serve a run directory read-only over HTTP, for the runner to fetch its evidence."""
    from arenac.runner.evidence_server import make_server

    if not root.is_dir():
        _fail("serve-evidence", f"--dir {root}: not a directory", EXIT_INPUT)
    try:
        server = make_server(root, host, port)
    except OSError as error:
        _fail("serve-evidence", f"cannot listen on {host}:{port}: {error.strerror or error}", EXIT_INPUT)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    _emit({"serving": str(root), "url": server.url})
    sys.stdout.flush()
    try:
        _until_signal(stop)
    finally:
        server.shutdown()
        server.server_close()


# one episode with an external agent, as a Harbor task's harness container runs it (its own module:
# it shares nothing of the commands above but the group)
from arenac.cli.harness_episode import episode, finish, status  # noqa: E402 - after the group it joins

harness.add_command(episode)
harness.add_command(status)
harness.add_command(finish)
