"""What marks a run directory, a qualification directory and a campaign directory, and whether a run is complete.

Shared by the runner (which writes the marks), the verifier (`arenac grade` refuses an incomplete
run) and the CLI (which refuses an `--out` it would clobber); it imports nothing of theirs, so the
verifier, a lower layer, never imports the runner. Layout: docs/evidence.md.

Contract:
- An episode writes `INCOMPLETE` into its run directory before anything else and removes it only
  after verdict.json, reward.json and the final run.json are written. A run directory that holds
  `INCOMPLETE` is one whose episode never finished (the runner was killed, crashed, or lost power):
  `incomplete_reason` says so, and nothing may grade or reuse it.
- `is_run_dir`: the directory holds run.json or INCOMPLETE (what this version writes first), or
  events.jsonl beside evidence/timeline.json (a run written before run.json existed).
- `is_qualification_dir`: the directory holds qualification.json, or a run directory at
  TASK/VARIANT/RUN (a qualification stopped before its report), or nothing but `build/`, empty or
  holding bundles at build/TASK/VARIANT (specs compiled by a qualification stopped before its
  first episode).
- `is_campaign_dir`: the directory holds results.sqlite, or nothing but `build/` and
  campaign.json (a campaign stopped before its first trial ended).
- `RUN_FILES`: every entry an episode writes at the top of its run directory; a new episode
  clears exactly these before it starts, and leaves anything else alone.
- Every function here only reads.
"""

from __future__ import annotations

from pathlib import Path

INCOMPLETE = "INCOMPLETE"
RUN_RECORD = "run.json"
QUALIFICATION_REPORT = "qualification.json"
CAMPAIGN_DATABASE = "results.sqlite"  # arenac/campaign/store.py's
CAMPAIGN_RECORD = "campaign.json"
RUN_FILES = (INCOMPLETE, RUN_RECORD, "events.jsonl", "actions.jsonl", "agent.log", "live.json", "verdict.json",
             "reward.json", "evidence", "cluster.json")


def is_run_dir(path: Path) -> bool:
    path = Path(path)
    if (path / RUN_RECORD).is_file() or (path / INCOMPLETE).exists():
        return True
    return (path / "events.jsonl").is_file() and (path / "evidence" / "timeline.json").is_file()


def incomplete_reason(run_dir: Path) -> str | None:
    """Why the run in RUN_DIR cannot stand as a finished run (None: it may be graded)."""
    if (Path(run_dir) / INCOMPLETE).exists():
        return (f"it is marked incomplete ({INCOMPLETE}): its episode did not finish (the runner was "
                "stopped, killed or crashed before the verdict was written)")
    return None


def is_campaign_dir(path: Path) -> bool:
    """A campaign directory (arenac/campaign): its results database, or a campaign that compiled
    its specs (build/) and stopped before its first trial ended."""
    path = Path(path)
    if (path / CAMPAIGN_DATABASE).is_file():
        return True
    return {entry.name for entry in path.iterdir()} <= {"build", CAMPAIGN_RECORD}


def is_qualification_dir(path: Path) -> bool:
    path = Path(path)
    if (path / QUALIFICATION_REPORT).is_file():
        return True
    entries = [entry for entry in path.iterdir()]
    if [entry.name for entry in entries] == ["build"] and entries[0].is_dir():
        build = entries[0]
        return not any(build.iterdir()) or any(p.is_file() for p in build.glob("*/*/manifest.json"))
    # only names of the qualification's own shape are looked into (TASK/TASK-HASH/RUN), so that an
    # unrelated, large directory is not walked
    for task in entries:
        if not task.is_dir() or task.name == "build":
            continue
        for variant in _subdirectories(task):
            if variant.name.startswith(task.name + "-") and any(is_run_dir(run) for run in _subdirectories(variant)):
                return True
    return False


def _subdirectories(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir()]
    except OSError:  # unreadable: not ours
        return []
