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
  campaign.py       campaign                        (its trials and summary: campaign_run.py)
  report.py         report                          (what it writes: arenac/report/)
  export.py         export harbor                   (what it writes: arenac/export/)
  harness.py        harness inject|trigger|snapshot|acked|sample|loadgen|serve-evidence
                                                    (a cluster's harness pods: arenac/runner/harness_commands.py)

Each command's module is imported only when that command runs (`_COMMANDS`: name -> module and
attribute), so `arenac check` loads the compiler and nothing else: neither the runner's episode
machinery, the verifier nor the substrate's runtime, whose imports are heavy. Listing the commands
(`arenac --help`) imports them all, for their help lines.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any, ClassVar

import click

from arenac.extras import missing_local, unavailable_command

# command name -> (module under arenac.cli, the command's name in it)
_COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("compiling", "check"),
    "compile": ("compiling", "compile_command"),
    "variants": ("compiling", "variants"),
    "fmt": ("compiling", "fmt"),
    "schema": ("bundles", "schema"),
    "verify-bundle": ("bundles", "verify_bundle_command"),
    "run": ("runs", "run"),
    "qualify": ("runs", "qualify"),
    "adversaries": ("runs", "adversaries"),
    "grade": ("grade", "grade"),
    "substrate": ("substrate", "substrate"),
    "calibrate": ("substrate", "calibrate"),
    "campaign": ("campaign", "campaign"),
    "report": ("report", "report"),
    "harness": ("harness", "harness"),
    "export": ("export", "export"),
}


class _Main(click.Group):
    """The group of `_COMMANDS`, each imported when it is asked for. A command whose module needs
    the `local` extra (arenac/extras.py) is, when the extra is missing, a stand-in that `--help`
    lists with the install line and that refuses in one line whatever it is given; `run`,
    `qualify` and `calibrate` check for themselves, first thing."""

    needs_local: ClassVar[frozenset[str]] = frozenset({"grade", "substrate", "report", "harness"})

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # A command makes most of its objects once and keeps them (modules, classes, the library,
        # the syntax trees) and few cycles: at the default threshold (700 allocations) the cyclic
        # collector ran ~130 times in `arenac check tasks/` and traversed them all, a tenth of its
        # time. It still runs, every 10,000 allocations; the caller's setting is restored after.
        previous = gc.get_threshold()
        gc.set_threshold(10_000, 10, 10)
        try:
            return super().main(*args, **kwargs)
        finally:
            gc.set_threshold(*previous)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        if cmd_name in self.needs_local:
            missing = missing_local()
            if missing:
                return unavailable_command(cmd_name, missing)
        module, attribute = _COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f"arenac.cli.{module}"), attribute)
        return command


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arenac")
def main() -> None:
    """arenac: compile and run live-incident benchmark tasks."""

