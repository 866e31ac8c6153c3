"""CLI of the substrate: `arenac substrate up|status` and `arenac calibrate`.

Contract:
- `arenac substrate up spine [--dir D] [--ready-file F] [--release R | --release SERVICE=R]...
  [--set KEY=VALUE]...` runs a stack in the foreground until Ctrl-C or SIGTERM, then stops every
  process it started and leaves no port open. Once every component is ready it writes the
  endpoints JSON (gateway URL, service URLs, PostgreSQL DSNs, Redis URLs, PIDs) to F (and always to
  D/endpoints.json). Without --dir the stack lives in a temporary directory removed at exit.
- `arenac substrate status [--dir D | --ready-file F] [--json]` probes every component of a
  running stack; exit code 0 when all are ready, 1 otherwise.
- `arenac calibrate [--runs N] [--time-scale S] [--out PATH]` writes the healthy baseline
  (default: the committed library/substrates/spine/baseline.json).
Heavy imports happen inside the commands so that `arenac --help` stays fast.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

import click

SUBSTRATES = ("spine",)


class _Stop(Exception):
    """Raised from the signal handler to leave the foreground loop (or an unfinished start)."""


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
def up(name: str, data_dir: Path | None, ready_file: Path | None, releases: tuple[str, ...], sets: tuple[str, ...]) -> None:
    """Run the substrate in the foreground until Ctrl-C or SIGTERM."""
    from arenac.substrate.spine.keys import SERVICES, ConfigError
    from arenac.substrate.spine.spec import SpineSpec
    from arenac.substrate.spine.stack import SpineStack

    try:
        spec = SpineSpec().with_sets(sets)
        for item in releases:
            service, _, version = item.rpartition("=")
            spec = spec.with_release(version, [service] if service else SERVICES)
    except (ConfigError, ValueError) as exc:
        raise click.BadParameter(str(exc)) from None

    temporary = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="spine-")) if data_dir is None else data_dir

    def on_signal(signum: int, _: FrameType | None) -> None:
        raise _Stop(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    stack = SpineStack(root, spec)
    try:
        started = time.monotonic()
        endpoints = stack.start()
        if ready_file is not None:
            ready_file.write_text(endpoints.to_json())
        click.echo(f"spine ready in {time.monotonic() - started:.1f} s: gateway {endpoints.gateway}, "
                   f"data {root}", err=True)
        reported: set[str] = set()
        while True:  # a crashed component is reported, not restarted: restarts are the operator's call
            time.sleep(1)
            for component in set(stack.exited()) - reported:
                reported.add(component)
                click.echo(f"spine: {component} exited (see {stack.log_path(component)})", err=True)
    except _Stop as stop:
        click.echo(f"spine: {stop}, stopping", err=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stack.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@substrate.command()
@click.option("--dir", "data_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--ready-file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
def status(data_dir: Path | None, ready_file: Path | None, as_json: bool) -> None:
    """Report the health of a running stack (from its ready file or data directory)."""
    from dataclasses import asdict

    from arenac.substrate.spine.stack import Endpoints, probe

    source = ready_file or (data_dir / "endpoints.json" if data_dir else None)
    if source is None:
        raise click.UsageError("give --dir or --ready-file")
    if not source.exists():
        click.echo(f"no running stack: {source} does not exist", err=True)
        sys.exit(1)
    report = probe(Endpoints.from_json(source.read_text()))
    if as_json:
        click.echo(json.dumps([asdict(item) for item in report], indent=2))
    else:
        for item in report:
            state = "ready" if item.ready else ("running, not ready" if item.running else "down")
            click.echo(f"{item.name:12} pid {item.pid or '-':>7}  {state}{'  ' + item.detail if item.detail else ''}")
    sys.exit(0 if all(item.ready for item in report) else 1)


@click.command()
@click.option("--runs", default=3, show_default=True, help="independent runs, each on a fresh stack")
@click.option("--time-scale", default=1.0, show_default=True, help="multiplies every duration of the profile")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="default: the committed library/substrates/spine/baseline.json")
def calibrate(runs: int, time_scale: float, out: Path | None) -> None:
    """Drive the standard load against healthy spine stacks and write the baseline."""
    from arenac.substrate.calibrate import calibrate as run_calibration
    from arenac.substrate.spine.seed import substrate_file

    target = out or Path(str(substrate_file("baseline.json")))
    baseline = run_calibration(runs=runs, time_scale=time_scale, out=target)
    click.echo(f"baseline written to {target}: goodput {baseline['goodput_rps']} req/s, "
               f"error rate {baseline['error_rate']}", err=True)
    for route, phases in baseline["routes"].items():
        for phase, row in phases.items():
            spread = row["spread"]["p99_ms"]
            click.echo(f"  {route:9} {phase:7} p50 {row['p50_ms']:7.1f}  p95 {row['p95_ms']:7.1f}  "
                       f"p99 {row['p99_ms']:7.1f} ms (runs {spread['min']}..{spread['max']})  "
                       f"errors {row['error_rate']:.4f}  goodput {row['goodput_rps']:.2f}/s")
