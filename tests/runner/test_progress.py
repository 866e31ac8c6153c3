"""An episode's progress: plain whole lines, one per phase, where the output is not a terminal (so
the result line printed after it stands alone); a line rewritten in place on a terminal."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from rich.console import Console

from arenac.runner.progress import Progress


def _shown(tmp_path: Path, terminal: bool) -> str:
    events = tmp_path / "events.jsonl"
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    with Progress(tmp_path, console=console):
        for phase in ("warmup", "agent_started"):
            with events.open("a") as handle:
                handle.write(json.dumps({"event": phase, "t": 0.0}) + "\n")
            time.sleep(1.3)
    out.write("RESULT\n")
    return out.getvalue()


def test_off_a_terminal_each_phase_is_one_whole_line(tmp_path: Path) -> None:
    shown = _shown(tmp_path, terminal=False)
    lines = shown.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["warmup", "agent_started"]
    assert lines[-1] == "RESULT" and "\r" not in shown and "\x1b" not in shown


def test_on_a_terminal_the_line_is_rewritten_in_place(tmp_path: Path) -> None:
    shown = _shown(tmp_path, terminal=True)
    assert "\x1b[" in shown  # cursor control: the same line drawn again
