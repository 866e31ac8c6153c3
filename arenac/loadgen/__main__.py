"""`python -m arenac.loadgen`: the load generator as its own process (the runner keeps it out of the
agent's reach).

    python -m arenac.loadgen --profile PROFILE.json --target URL --out LEDGER.json
        [--time-scale S] [--duration-s N | --cycles N] [--seed N] [--ready-file F] [--anchor-unix T]
        [--substrate spine|plain] [--client-timeout-s X] [--drain-s X] [--flush-s X] [--live-file F]
        [--acks-out ACKS.jsonl]

PROFILE.json is a LoadProfile (`LoadProfile.model_dump()`), or an object with one under "profile".
`--duration-s` is in plan seconds (omit it to run until SIGTERM/SIGINT). The first SIGTERM or
SIGINT stops starting requests, waits for the ones in flight (at most --drain-s) and writes the
final ledger; a second one cuts that wait short. Exit codes: 0 done, 2 bad arguments or a target
that failed setup (nothing written), 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from arenac.loadgen.generator import CLIENT_TIMEOUT_S, FLUSH_S, run_load
from arenac.loadgen.routes import SUBSTRATES, SetupError
from arenac.model.library import LoadProfile


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m arenac.loadgen", description="Open-loop load generator.")
    parser.add_argument("--profile", type=Path, required=True, help="LoadProfile JSON")
    parser.add_argument("--target", required=True, help="base URL (spine: the gateway)")
    parser.add_argument("--out", type=Path, required=True, help="ledger.json to write")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--duration-s", type=float, default=None, help="plan seconds (default: until SIGTERM)")
    parser.add_argument("--cycles", type=int, default=None,
                        help="stop after the warm-up and N cycles (instead of --duration-s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ready-file", type=Path, default=None)
    parser.add_argument("--anchor-unix", type=float, default=None,
                        help="cycles start at T + k * cycle length (Unix time); 0 aligns them as calibrate does")
    parser.add_argument("--substrate", choices=SUBSTRATES, default="spine")
    parser.add_argument("--client-timeout-s", type=float, default=CLIENT_TIMEOUT_S)
    parser.add_argument("--drain-s", type=float, default=None, help="default: the client timeout")
    parser.add_argument("--flush-s", type=float, default=FLUSH_S, help="ledger rewrite interval (real seconds)")
    parser.add_argument("--live-file", type=Path, default=None,
                        help="live view (LiveView.read), rewritten twice a second")
    parser.add_argument("--acks-out", type=Path, default=None,
                        help="acknowledged writes, one JSON line each (arenac/loadgen/acks.py)")
    return parser.parse_args(argv)


def load_profile(path: Path) -> LoadProfile:
    data = json.loads(path.read_text())
    if isinstance(data, dict) and "phases" not in data and "profile" in data:
        data = data["profile"]
    return LoadProfile.model_validate(data)


def _raise_fd_limit() -> None:
    """Open loop means one socket per request in flight: use the hard limit of open files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        profile = load_profile(args.profile)
    except (OSError, ValueError) as exc:
        print(f"loadgen: cannot read the profile {args.profile}: {exc}", file=sys.stderr)
        return 2
    stop, abort = threading.Event(), threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        (abort if stop.is_set() else stop).set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _raise_fd_limit()
    try:
        summary = run_load(profile, args.target, args.time_scale, args.duration_s, args.out, stop,
                           substrate=args.substrate, cycles=args.cycles, seed=args.seed, anchor_unix=args.anchor_unix,
                           client_timeout_s=args.client_timeout_s, flush_s=args.flush_s,
                           ready_file=args.ready_file, live_file=args.live_file, drain_s=args.drain_s,
                           abort_event=abort, acks_out=args.acks_out)
    except (SetupError, ValueError) as exc:
        print(f"loadgen: {exc}", file=sys.stderr)
        return 2
    print(summary.line(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
