"""The diagnostics corpus (tests/diagnostics/): its cases, where each one's pinned text lives, and
what `arenac check` prints for a case, exactly as tests/refresh.py writes it.

A case is `NN-name.arena` (one spec) or a directory `NN-name/` checked as a whole (for what cannot
be one UTF-8 spec), each with its `NN-name.expected`: the output, then `exit code: N`.
"""

from __future__ import annotations

from pathlib import Path

from helpers import ROOT

DIAGNOSTICS = ROOT / "tests" / "diagnostics"


def corpus_cases() -> list[Path]:
    """Every case of the corpus, sorted: the spec files and the directories."""
    return sorted([*DIAGNOSTICS.glob("*.arena"), *(p for p in DIAGNOSTICS.iterdir() if p.is_dir())])


def expected_path(case: Path) -> Path:
    """The file that pins a case's output: `NN-name.expected` beside it."""
    return case.parent / f"{case.stem if case.is_file() else case.name}.expected"


def check_output(spec: Path) -> str:
    """What `arenac check SPEC` prints (stderr and stdout) and its exit code; SPEC is named
    relative to the repository root, as a user there would name it."""
    return check_output_of(spec.relative_to(ROOT).as_posix())


def check_output_of(*paths: str, command: list[str] | None = None) -> str:
    """What `arenac <command> PATHS...` prints and its exit code, like `check_output`."""
    from click.testing import CliRunner

    from arenac.cli import main

    result = CliRunner().invoke(main, [*(command or ["check"]), *paths])
    return f"{result.output}exit code: {result.exit_code}\n"
