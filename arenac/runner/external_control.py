"""The control directory of `arenac harness episode` (its `--run-dir`): how the episode's process,
`arenac harness status` and `arenac harness finish` talk, through files only.

Layout (the directory mode 0700: the harness's own user only; the agent's container never sees it,
and an agent user on the same machine cannot read or write it):

- `status.json`: the episode's `HarnessStatus` (arenac/model/harness_status.py), replaced
  atomically by the episode's process at each phase.
- `finish.request`: created by `finish` (`request_finish`, idempotent): the agent's phase is over.
  The episode polls it (`finish_requested`) while the agent's window is open; a request made
  before the handover closes the window at the handover.
- `run/`: the run directory (docs/evidence.md), mode 0700.

`handover_state(status)` is what `status --handed-over` decides; `collect(control, out)` copies the
graded run's files for `finish`. This module is light (no substrate, no broker): the healthcheck
runs it every few seconds.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from arenac.core.serialize import write_atomic
from arenac.model.harness_status import HarnessStatus

STATUS = "status.json"
FINISH = "finish.request"
RUN = "run"
# what `finish` copies out of the run directory (the verifier's and Harbor's view of the trial)
COLLECTED_FILES = ("verdict.json", "reward.json", "run.json", "events.jsonl", "actions.jsonl")
COLLECTED_DIRS = ("evidence",)


class ControlError(Exception):
    """The control directory holds no readable episode (none started there, or not ours)."""


@dataclass(frozen=True)
class Control:
    root: Path

    @property
    def status_path(self) -> Path:
        return self.root / STATUS

    @property
    def run_dir(self) -> Path:
        return self.root / RUN

    def create(self) -> None:
        """The directory, private to this user (made so even when it existed)."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)

    def write(self, status: HarnessStatus) -> None:
        write_atomic(self.status_path, status.model_dump_json(exclude_none=True) + "\n")

    def read(self) -> HarnessStatus:
        """The episode's status; ControlError when there is none to read."""
        try:
            text = self.status_path.read_bytes()
        except FileNotFoundError:
            raise ControlError(f"{self.root}: no episode has started there (no {STATUS})") from None
        except OSError as error:
            raise ControlError(f"{self.status_path}: cannot read it: {error.strerror or error}") from None
        try:
            return HarnessStatus.model_validate_json(text)
        except ValidationError:
            raise ControlError(f"{self.status_path}: not the status of an `arenac harness episode`") from None

    def request_finish(self) -> None:
        try:
            write_atomic(self.root / FINISH, "the agent's phase is over\n")
        except OSError as error:
            raise ControlError(f"{self.root}: cannot ask the episode to finish: {error.strerror or error}") from None

    def finish_requested(self) -> bool:
        return (self.root / FINISH).exists()


HandoverState = Literal["handed_over", "not_yet", "never"]


def handover_state(status: HarnessStatus) -> HandoverState:
    """handed_over: the agent's doors opened (now or earlier); not_yet: the episode is still on its
    way there; never: it ended before (void, infra_error, or it could not run)."""
    if status.handed_over:
        return "handed_over"
    if status.phase == "provisioning" and process_alive(status.pid):
        return "not_yet"
    return "never"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def collect(control: Control, out: Path) -> list[Path]:
    """Copy the graded run's files into `out` (created; readable by others: the verifier reads them
    after Harbor downloads them); returns what was copied. A file the run lacks (actions.jsonl of
    an agent that made no call) is left out."""
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o755)
    copied = []
    for name in COLLECTED_FILES:
        source = control.run_dir / name
        if source.is_file():
            shutil.copyfile(source, out / name)
            os.chmod(out / name, 0o644)
            copied.append(out / name)
    for name in COLLECTED_DIRS:
        source = control.run_dir / name
        if source.is_dir():
            target = out / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target, symlinks=True, copy_function=shutil.copyfile)
            for directory, _dirs, files in os.walk(target):
                os.chmod(directory, 0o755)
                for file in files:
                    path = Path(directory, file)
                    if not path.is_symlink():
                        os.chmod(path, 0o644)
            copied.append(target)
    return copied
