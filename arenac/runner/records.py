"""Run records: events.jsonl (the timeline, append-only), JSON files in the run and evidence
folders (each written atomically), and the run directory's completeness marks.

Contract (docs/evidence.md):
- `write_json(path, data)`: canonical JSON, atomically and durably (serialize.write_atomic);
  `write_model(path, model)` the same for a record that is a model (an evidence file:
  arenac/model/evidence.py; the qualification report: arenac/model/report.py).
- `begin_run(out, bundle, options)`, first thing an episode does in its run directory: writes the
  `INCOMPLETE` marker, then, when OUT held an earlier run (rundir.is_run_dir), clears what it left
  (only the entries an episode writes: rundir.RUN_FILES), then writes run.json (`RunRecord`:
  which episode this directory holds).
- `finish_run(out, record, wall_s)`, last thing, after verdict.json and reward.json: rewrites
  run.json with the episode's wall time, fsyncs every file and directory of the run, then removes
  the marker. A crash anywhere in between
  leaves the directory marked incomplete, never a verdict that looks final over partial evidence.
- `record_infra_error(run_dir, reason, time_scale)`: evidence/timeline.json ended as infra_error for
  `reason` (the one there, else a new one), for an episode that could not end its own (a worker
  that died; a trial on a cluster that failed); a write that fails is said on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path

from pydantic import BaseModel

from arenac.core.serialize import dump_json, fsync_directory, write_atomic
from arenac.model.evidence import Timeline
from arenac.model.run import RunRecord
from arenac.rundir import INCOMPLETE, RUN_FILES, RUN_RECORD, is_run_dir
from arenac.runner.options import backend_name


class EventLog:
    """The timeline of events. A line that cannot be written (a full disk) does not stop the
    episode where it happens: the first such error is kept in `write_error`, and the episode
    that owns the log ends as an infra_error because of it."""

    def __init__(self, path: Path, clock=None):
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self.write_error: OSError | None = None

    def __call__(self, event: str, **fields) -> None:
        record = {"event": event, "t": round(self.clock.now(), 3) if self.clock else None, **fields}
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        except OSError as error:
            self.write_error = self.write_error or error


def write_json(path: Path, data) -> None:
    """Canonical JSON, written atomically and durably (serialize.write_atomic): a reader, or the
    next runner after a crash, sees the old record or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump_json(data))


def write_model(path: Path, model: BaseModel) -> None:
    """A model's JSON (what it leaves out while empty stays out: EvidenceModel), as write_json."""
    write_json(path, model.model_dump(mode="json"))


def begin_run(out: Path, bundle, options) -> RunRecord:
    """Mark OUT incomplete, clear an earlier run's entries, record which episode it now holds."""
    out.mkdir(parents=True, exist_ok=True)
    earlier_run = is_run_dir(out)  # what is not a run directory is not ours to delete from
    # the marker first: a crash while the earlier run is cleared leaves a directory marked
    # incomplete, never an earlier verdict beside this run's partial evidence
    write_atomic(out / INCOMPLETE, f"the episode writing this run directory (runner pid {os.getpid()}) has not "
                                   "finished: do not grade or reuse it\n")
    for name in RUN_FILES if earlier_run else ():
        if name == INCOMPLETE:
            continue
        entry = out / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()
    record = RunRecord(task=bundle.plan.task, variant=bundle.plan.variant, bundle_digest=bundle.bundle_digest,
                       agent=options.agent, inject_faults=options.inject_faults, time_scale=options.time_scale,
                       backend=backend_name(options.cluster), substrate=bundle.plan.substrate,
                       access=bundle.plan.access.name,
                       faults={fault.name: fault.layer for fault in bundle.plan.faults})
    write_model(out / RUN_RECORD, record)
    return record


def finish_run(out: Path, record: RunRecord, wall_s: float) -> None:
    """After verdict.json and reward.json: the wall time into run.json, every file of the run made
    durable, then the marker goes."""
    write_model(out / RUN_RECORD, record.model_copy(update={"wall_s": wall_s}))
    # what others wrote without fsync (the load generator's ledger, the appended logs) must be on
    # disk before the run can read as complete: a power loss must not keep the verdict and lose them
    _fsync_tree(out)
    (out / INCOMPLETE).unlink(missing_ok=True)
    fsync_directory(out)  # the removal is what makes the run complete: it must survive a crash too


def _fsync_tree(root: Path) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                descriptor = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:  # a symlink (the live view's), or gone meanwhile: nothing of ours to sync
                continue
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        fsync_directory(Path(directory))


def read_run_record(run_dir: Path) -> RunRecord | None:
    """run.json as written by begin_run/finish_run; None when absent or not of that shape."""
    try:
        return RunRecord.model_validate_json((run_dir / RUN_RECORD).read_bytes())
    except (OSError, ValueError):
        return None


def record_infra_error(run_dir: Path, reason: str, time_scale: float) -> None:
    """The timeline of an episode that ended without its own: an infra_error for `reason`, whatever it
    had reached (a worker that died, a trial on a cluster that failed before or after its run was
    fetched)."""
    path = run_dir / "evidence" / "timeline.json"
    try:
        timeline = Timeline.model_validate_json(path.read_bytes()).ended("infra_error", reason)
    except (OSError, ValueError):  # none yet (the episode writes it last), or cut short
        timeline = Timeline(time_scale=time_scale, status="infra_error", void_reason=reason, declared_s=None)
    try:
        write_model(path, timeline)
    except OSError as error:  # e.g. the disk that failed the episode is full
        print(f"arenac: could not record the infra_error in {path}: {error.strerror}", file=sys.stderr)
