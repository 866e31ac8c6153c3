"""An `arenac` command line as the harness image runs it, parsed by click without running anything:
for tests that check the commands a chart or an exported task names exist, with options they accept."""

from __future__ import annotations

import importlib

import click

from helpers.dockerfiles import HARNESS, exec_form, installed_commands


def arenac_group() -> click.Command:
    """The command the harness image's ENTRYPOINT runs: the console script pyproject.toml installs."""
    [entrypoint] = exec_form(HARNESS.dockerfile, "ENTRYPOINT") or [""]
    module, _, attribute = installed_commands(HARNESS.pyproject)[entrypoint].partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Group)
    return command


def parse_arenac(args: list[str]) -> str:
    """Walk the group to the command ARGS name and parse its options with click, running nothing;
    returns the command's path. A click error (no such command, a bad option) is raised."""
    command: click.Command = arenac_group()
    context = click.Context(command, info_name="arenac")
    path, rest = ["arenac"], list(args)
    while isinstance(command, click.Group):
        assert rest and not rest[0].startswith("-"), f"{' '.join(path)}: no subcommand in {args}"
        found = command.get_command(context, rest[0])
        if found is None:
            raise click.UsageError(f"No such command {rest[0]!r} under {' '.join(path)}")
        path.append(rest.pop(0))
        command = found
        context = click.Context(command, info_name=path[-1], parent=context)
    with command.make_context(path[-1], rest, parent=context.parent):
        pass
    return " ".join(path)
