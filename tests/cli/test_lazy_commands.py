"""The CLI imports a command's module only when that command runs: `arenac check` loads the
compiler and none of the runner, the verifier, the substrate's runtime or the evidence models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from arenac.cli import _COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
# what `check` must never load: the machinery of episodes and verdicts, their models, the bundle
# templates (it lints the generated RBAC, arenac/render/rbac.py, but renders nothing)
HEAVY = ("arenac.runner", "arenac.verify", "arenac.loadgen", "arenac.substrate", "arenac.campaign",
         "arenac.report", "arenac.model.evidence", "jinja2", "junitparser", "aiohttp", "asyncpg", "redis", "rich",
         "kubernetes", "kmock")


def test_every_command_is_found_under_its_own_name() -> None:
    context = click.Context(main)
    assert main.list_commands(context) == sorted(_COMMANDS)
    for name in _COMMANDS:
        command = main.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name
    assert main.get_command(context, "no-such-command") is None


def _loaded_by(*argv: str) -> list[str]:
    """The HEAVY modules loaded once `arenac ARGV` has run, successfully (a command that stopped
    early would load nothing), in a fresh interpreter."""
    probe = ("import json, sys\nfrom arenac.cli import main\ncode = 0\n"
             f"try:\n    main({list(argv)!r})\nexcept SystemExit as stop:\n    code = stop.code\n"
             f"print(json.dumps([code, sorted(m for m in sys.modules if m.startswith({HEAVY!r}))]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    code, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert code in (0, None), done.stderr
    return list(loaded)


def test_check_loads_none_of_the_runner_or_the_verifier() -> None:
    assert _loaded_by("check", "tasks/") == []


def test_the_probe_sees_what_a_runner_command_loads() -> None:
    # the other side: `adversaries` lists the runner's strategies, so the runner is loaded
    assert any(name.startswith("arenac.runner") for name in _loaded_by("adversaries"))
