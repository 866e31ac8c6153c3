"""What the commands that run episodes share (`arenac run`, `qualify`, `campaign`): refusals as one
line, and the options of the agent's isolation (docs/security.md).

Contract: `RunnerCommand` turns click's own refusals (a bad option value, a missing argument, a
path that does not exist) into one line `arenac: ...` on stderr, exit 2, as `OneLineUsageError`
does for the commands' own; `isolation_options` adds --sandbox, --agent-network and --agent-ro,
and `isolation(...)` makes their `Isolation`. Light: the runner's options module only.
"""

from __future__ import annotations

from pathlib import Path

import click


class OneLineUsageError(click.UsageError):
    """A usage error as one line on stderr (`arenac: ...`), exit 2: what the runner's commands
    print for every input they refuse before starting anything (docs/runner.md)."""

    def show(self, file=None) -> None:
        click.echo(f"arenac: {self.format_message()}", err=True, file=file)


class RunnerCommand(click.Command):
    """The runner commands: click's own refusals (a bad option value, a missing
    argument, a bundle path that does not exist) as one line instead of usage + hint + error."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            raise OneLineUsageError(error.format_message(), ctx) from None


def isolation_options(command):
    """--sandbox, --agent-network, --agent-ro: how the agent is confined (docs/security.md)."""
    command = click.option("--agent-ro", "agent_ro", multiple=True, type=click.Path(file_okay=False, exists=True),
                           help="A directory the agent's own program needs, bound read-only into its sandbox "
                                "(repeatable).")(command)
    command = click.option("--agent-network", type=click.Choice(["private", "host"]), default="private",
                           show_default=True, help="private: the agent reaches only its tools; host: this "
                                                   "machine's network too (e.g. a model API).")(command)
    return click.option("--sandbox", type=click.Choice(["auto", "bwrap", "none"]), default="auto",
                        show_default=True, help="The agent's sandbox (auto: bubblewrap where it works, "
                                                "else none, with a warning).")(command)


def isolation(sandbox, agent_network, agent_ro):
    from arenac.runner.options import Isolation  # lazily: only the commands that run episodes need it

    return Isolation(sandbox=sandbox, agent_network=agent_network,
                     agent_ro=tuple(Path(p).resolve() for p in agent_ro))
