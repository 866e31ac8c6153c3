"""The substrate's commands: `arenac substrate up|status` and `arenac calibrate`.

Contract:
- `arenac substrate up spine [--dir D] [--ready-file F] [--release R | --release SERVICE=R]...
  [--set KEY=VALUE]...` runs a stack in the foreground until Ctrl-C or SIGTERM, then stops every
  process it started and leaves no port open, also when the signal comes during start-up. Once
  every component is ready it writes the endpoints JSON (gateway URL, service URLs, PostgreSQL DSNs,
  Redis URLs, PIDs) to F (and always to D/endpoints.json), both 0600. Without --dir the stack lives
  in a temporary directory removed at exit. A user's mistake (a bad value, an unusable --dir or
  --ready-file, a --dir another live stack owns) is one message and exit code 2, refused before
  anything starts; a component that fails to start is its log's tail and exit code 1, with
  everything stopped. Never a traceback.
- `arenac substrate status [--dir D | --ready-file F] [--json]` probes every component of a
  running stack; exit code 0 when all are ready, 1 otherwise, 2 for a file that is not a stack's
  endpoints.
- `arenac calibrate [--profile NAME] [--runs N] [--time-scale S] [--out PATH]` writes the healthy
  baseline of one load profile of spine (default: `standard`) to the committed
  library/substrates/spine/baselines/NAME.json (or PATH): a baseline is per profile, and a task is
  graded against its own profile's only. It reads the load profile from the library here, in the
  CLI (the substrate never parses specs), and hands it to the substrate's calibration; an unknown
  profile is one message and exit code 2.
Heavy imports happen inside the commands so that `arenac --help` stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from arenac.cli.common import EXIT_DIAGNOSTICS, report
from arenac.core.diagnostics import DiagnosticError
from arenac.extras import require_local
from arenac.lower.library import load_library
from arenac.model.baseline import baseline_file

if TYPE_CHECKING:
    from arenac.model.library import LoadProfile
    from arenac.substrate.spine.spec import SpineSpec
    from arenac.substrate.spine.stack import SpineStack

SUBSTRATES = ("spine",)
STANDARD_PROFILE = "standard"  # the load a task without `load =` gets (arenac/lower/task.py)


class _StopFlag:
    """Set by the SIGINT/SIGTERM handler. The handler only assigns attributes (nothing that takes a
    lock or raises), so a signal can never interrupt the stack half-way through starting a process;
    the stack notices at its next check and stops everything it started so far."""

    def __init__(self) -> None:
        self.signal_name = ""
        self.stack: SpineStack | None = None

    def __call__(self, signum: int, _: FrameType | None) -> None:
        self.signal_name = signal.Signals(signum).name
        if self.stack is not None:
            self.stack.cancel()


def _refuse(message: str, code: int = 2) -> NoReturn:
    """A user's mistake: one clear message on stderr, no traceback."""
    for line in message.splitlines() or [message]:
        click.echo(f"arenac substrate: {line}", err=True)
    sys.exit(code)


def _usable_dir(path: Path, what: str) -> None:
    """Create `path` if needed and check that files can be written in it; refuse otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _refuse(f"{what} {path}: cannot create it: {exc.strerror or exc}")
    if not path.is_dir():
        _refuse(f"{what} {path}: not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        _refuse(f"{what} {path}: not writable")


def _check_ready_file(ready_file: Path) -> None:
    parent = ready_file.parent
    if not parent.is_dir():
        _refuse(f"--ready-file {ready_file}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (ready_file.exists() and not os.access(ready_file, os.W_OK)):
        _refuse(f"--ready-file {ready_file}: not writable")


@click.group()
def substrate() -> None:
    """Run and inspect a bundled substrate locally."""


@substrate.command()
@click.argument("name", type=click.Choice(SUBSTRATES))
@click.option("--dir", "data_dir", type=click.Path(file_okay=False, path_type=Path),
              help="data directory (kept); default: a temporary one, removed at exit")
@click.option("--ready-file", type=click.Path(dir_okay=False, path_type=Path),
              help="write the endpoints JSON here once every component is ready")
@click.option("--release", "releases", multiple=True, metavar="R|SERVICE=R",
              help="release for every service, or for one service (repeatable)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="SERVICE.KEY=V, KEY=V (every service reading KEY), redis.maxmemory=V, postgres.SETTING=V")
def up(name: str, data_dir: Path | None, ready_file: Path | None, releases: tuple[str, ...],
       sets: tuple[str, ...]) -> None:
    """Run the substrate in the foreground until Ctrl-C or SIGTERM."""
    # everything a user can get wrong is refused here, before anything starts or is written
    spec = _spec_or_refuse(releases, sets)
    if ready_file is not None:
        _check_ready_file(ready_file)
    if data_dir is not None:
        _usable_dir(data_dir, "--dir")
    failure = _serve(spec, data_dir, ready_file)
    if failure is not None:
        _refuse(*failure)


def _spec_or_refuse(releases: tuple[str, ...], sets: tuple[str, ...]) -> SpineSpec:
    """The stack's spec from --release and --set, checked as a whole (preflight) or refused."""
    # lazily, here and below: `arenac --help` imports this module to list its commands
    from arenac.substrate.spine.spec import SpecError, SpineSpec
    from arenac.substrate.spine.stack import preflight
    from spine_services.keys import SERVICES, ConfigError

    try:
        spec = SpineSpec().with_sets(sets)
        for item in releases:
            service, _, version = item.rpartition("=")
            spec = spec.with_release(version, [service] if service else SERVICES)
        preflight(spec)
    except SpecError as exc:
        _refuse("\n".join(exc.problems))
    except ConfigError as exc:
        _refuse(str(exc))
    return spec


def _serve(spec: SpineSpec, data_dir: Path | None, ready_file: Path | None) -> tuple[str, int] | None:
    """Start the stack, publish its endpoints, watch it until a signal, and stop everything it
    started, whatever happened. Returns the failure to report (message, exit code), or None."""
    from arenac.substrate.procs import write_private
    from arenac.substrate.spine.stack import Cancelled, ComponentFailed, DirectoryBusy, SpineStack

    flag = _StopFlag()
    previous = {sig: signal.signal(sig, flag) for sig in (signal.SIGINT, signal.SIGTERM)}
    temporary = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="spine-")) if data_dir is None else data_dir
    stack = flag.stack = SpineStack(root, spec)
    if flag.signal_name:  # a signal before the stack existed
        stack.cancel()
    failure: tuple[str, int] | None = None
    published = False
    try:
        started = time.monotonic()
        endpoints = stack.start()
        if ready_file is not None:
            write_private(ready_file, endpoints.to_json())
            published = True
        click.echo(f"spine ready in {time.monotonic() - started:.1f} s: gateway {endpoints.gateway}, "
                   f"data {root}", err=True)
        _watch(stack, flag)
    except Cancelled:
        pass
    except DirectoryBusy as exc:
        failure = (str(exc), 2)
    except ComponentFailed as exc:
        failure = (str(exc) + ("" if temporary else f"\nlogs: {root / 'logs'}"), 1)
    except (TimeoutError, OSError) as exc:
        failure = (f"spine did not start: {exc}", 1)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if flag.signal_name:
            click.echo(f"spine: {flag.signal_name}, stopping", err=True)
        stack.stop()
        if published and ready_file is not None:  # published: the ready file was written
            ready_file.unlink(missing_ok=True)
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return failure


def _watch(stack: SpineStack, flag: _StopFlag) -> None:
    """Until a signal: a crashed component is reported, not restarted (the operator's call)."""
    reported: set[str] = set()
    while not flag.signal_name:
        time.sleep(0.2)
        for component in set(stack.exited()) - reported:
            reported.add(component)
            click.echo(f"spine: {component} exited (see {stack.log_path(component)})", err=True)


@substrate.command()
@click.option("--dir", "data_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--ready-file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
def status(data_dir: Path | None, ready_file: Path | None, as_json: bool) -> None:
    """Report the health of a running stack (from its ready file or data directory)."""
    from arenac.substrate.spine.endpoints import Endpoints, EndpointsError, probe  # lazily: see `up`

    source = ready_file or (data_dir / "endpoints.json" if data_dir else None)
    if source is None:
        raise click.UsageError("give --dir or --ready-file")
    if not source.exists():
        click.echo(f"no running stack: {source} does not exist", err=True)
        sys.exit(1)
    try:
        endpoints = Endpoints.from_json(source.read_bytes())
    except OSError as exc:
        _refuse(f"{source}: cannot read it: {exc.strerror or exc}")
    except EndpointsError as exc:
        _refuse(f"{source}: {exc}")
    report = probe(endpoints)
    if as_json:
        click.echo(json.dumps([asdict(item) for item in report], indent=2))
    else:
        for item in report:
            state = "ready" if item.ready else ("running, not ready" if item.running else "down")
            click.echo(f"{item.name:12} pid {item.pid or '-':>7}  {state}{'  ' + item.detail if item.detail else ''}")
    sys.exit(0 if all(item.ready for item in report) else 1)


@click.command()
@click.option("--profile", "profile_name", default=STANDARD_PROFILE, show_default=True,
              help="the load profile of spine to calibrate (`spine.NAME` or NAME)")
@click.option("--runs", default=3, show_default=True, help="independent runs, each on a fresh stack")
@click.option("--time-scale", default=1.0, show_default=True, help="multiplies every duration of the profile")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="default: the committed library/substrates/spine/baselines/PROFILE.json")
def calibrate(profile_name: str, runs: int, time_scale: float, out: Path | None) -> None:
    """Drive a load profile against healthy spine stacks and write its baseline."""
    require_local("calibrate")  # the local extra first: one line, not an ImportError
    write_calibration(calibration_profile(profile_name), runs, time_scale, out)


def calibration_profile(name: str) -> LoadProfile:
    """The library's spine profile NAME (`spine.` optional); an unknown one is refused (exit code 2)."""
    try:
        loads = load_library().substrates["spine"].loads
    except DiagnosticError as error:
        report(error, "text")
        sys.exit(EXIT_DIAGNOSTICS)
    bare = name.removeprefix("spine.")
    if bare not in loads:
        _refuse(f"spine has no load profile {name!r} (its profiles: {', '.join(sorted(loads))})")
    return loads[bare]


def calibration_target(profile: LoadProfile, out: Path | None) -> Path:
    """Where the calibration of `profile` goes: OUT, else the library's baselines/PROFILE.json."""
    from arenac.substrate.spine.seed import substrate_file  # lazily: see `write_calibration`

    return out or Path(str(substrate_file(baseline_file(profile.name))))


def write_calibration(profile: LoadProfile, runs: int, time_scale: float, out: Path | None) -> None:
    """Drive `profile` against healthy spine stacks, write its baseline and print its summary."""
    # lazily: the load generator and the stack (aiohttp, asyncpg, ...) load only when calibrating
    from arenac.substrate.calibrate import calibrate as run_calibration

    target = calibration_target(profile, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    baseline = run_calibration(profile, runs=runs, time_scale=time_scale, out=target)
    click.echo(f"baseline written to {target}: goodput {baseline['goodput_rps']} req/s, "
               f"error rate {baseline['error_rate']}", err=True)
    for route, phases in baseline["routes"].items():
        for phase, row in phases.items():
            spread = row["spread"]["p99_ms"]
            click.echo(f"  {route:9} {phase:7} p50 {row['p50_ms']:7.1f}  p95 {row['p95_ms']:7.1f}  "
                       f"p99 {row['p99_ms']:7.1f} ms (runs {spread['min']}..{spread['max']})  "
                       f"errors {row['error_rate']:.4f}  goodput {row['goodput_rps']:.2f}/s")
