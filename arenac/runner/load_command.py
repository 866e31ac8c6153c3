"""The load generator's command line for an episode's plan, whichever backend starts it.

Contract: `loadgen_args(plan, target, time_scale, ledger, profile, ready, live_file)` is the
argument list of `python -m arenac.loadgen` (arenac/loadgen/__main__.py) for the plan's load: its
profile (written by `write_profile` to `profile`), the substrate's route client, the ledger and the
acknowledged writes beside it (`acks.jsonl`), the ready file naming the clock's zero, a live file
when asked for, a quarter-second flush and cycles anchored on the Unix epoch (as the substrate
schedules its maintenance). The local backend runs it as a process of its own (local_load.py);
`arenac harness loadgen` (a cluster's load generator pod) runs the same arguments in its own process.
"""

from __future__ import annotations

from pathlib import Path

from arenac.core.serialize import dump_json
from arenac.model.plan import Plan


def write_profile(plan: Plan, path: Path) -> None:
    """The plan's load profile, as the generator's `--profile` reads it."""
    path.write_text(dump_json(plan.load.model_dump(mode="json")), encoding="utf-8")


def loadgen_args(plan: Plan, target: str, time_scale: float, ledger: Path, profile: Path, ready: Path,
                 live_file: Path | None = None) -> list[str]:
    return (["--profile", str(profile), "--target", target, "--out", str(ledger), "--time-scale", f"{time_scale:g}",
             "--ready-file", str(ready), "--substrate", plan.substrate, "--flush-s", "0.25",
             "--acks-out", str(ledger.with_name("acks.jsonl")),
             # cycles anchored on the Unix epoch, as the substrate schedules its maintenance
             "--anchor-unix", "0"]
            + (["--live-file", str(live_file)] if live_file else []))
