"""Command-line entry point (`arenac = "arenac.cli:main"`): the group, and every command added to it.

The CLI is the only place that formats errors for humans: every phase raises data-carrying errors,
and the commands turn them into diagnostics and exit codes (arenac/cli/common.py lists the codes).
It is the top layer: it joins the compiler to the runner, the verifier and the substrate, and
nothing below imports it. One module per group of commands:

  compiling.py      check, compile, variants, fmt   (the table of `variants`: variants_table.py)
  bundles.py        verify-bundle, schema
  runs.py           run, qualify, adversaries       (their episodes and tables: episodes.py,
                                                    qualify_table.py, imported only by run/qualify)
  grade.py          grade
  substrate.py      substrate up|status, calibrate

The compiler is imported up front (every compiling command needs it; its renderer only when
rendering); the runner's episode machinery, the verifier and the substrate's runtime, whose imports
are heavy, only inside the commands that use them, so that `arenac check` never loads them.
"""

from __future__ import annotations

from typing import ClassVar

import click

from arenac.cli.bundles import schema, verify_bundle_command
from arenac.cli.compiling import check, compile_command, fmt, variants
from arenac.cli.grade import grade
from arenac.cli.runs import adversaries, qualify, run
from arenac.cli.substrate import calibrate, substrate
from arenac.extras import missing_local, unavailable_command


class _Main(click.Group):
    """The group: a command whose module needs the `local` extra (arenac/extras.py) is, when the
    extra is missing, a stand-in that `--help` lists with the install line and that refuses in one
    line whatever it is given; `run`, `qualify` and `calibrate` check for themselves, first thing."""

    needs_local: ClassVar[frozenset[str]] = frozenset({"grade", "substrate"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.needs_local:
            missing = missing_local()
            if missing:
                return unavailable_command(cmd_name, missing)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arenac")
def main() -> None:
    """arenac: compile and run live-incident benchmark tasks."""


for _command in (check, compile_command, variants, fmt, schema, verify_bundle_command, run, qualify, adversaries,
                 grade, substrate, calibrate):
    main.add_command(_command)
