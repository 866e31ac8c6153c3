"""The bundle's commands: `arenac verify-bundle` (a bundle against its manifest) and `arenac schema`
(the JSON Schema of its plan.json, or of a campaign file).

Contract: `verify-bundle DIR...` prints `ok: BUNDLE` for an intact bundle and, for one that is not,
a line `BUNDLE: FINDING` for each of `BundleCheck.findings()` (the wording the runner's refusal
uses), then exits 3; a DIR that is no bundle and holds none is exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arenac.bundle import MANIFEST, verify_bundle
from arenac.cli.common import EXIT_MISMATCH, EXIT_USAGE
from arenac.core.serialize import dump_json


@click.command()
@click.argument("what", type=click.Choice(["plan", "campaign"]), default="plan")
def schema(what):
    """Print the JSON Schema of a bundle's plan.json (plan, the default) or of a campaign file."""
    if what == "campaign":
        from arenac.model.campaign import CampaignSpec

        click.echo(dump_json(CampaignSpec.model_json_schema()), nl=False)
        return
    from arenac.render.plan import plan_json_schema  # lazily: the renderer stays out of `arenac check`

    click.echo(dump_json(plan_json_schema()), nl=False)


def _bundles_under(directories) -> list[Path]:
    """Each DIRECTORY if it is a bundle, else every bundle under it; exit 2 for one holding none."""
    bundles: list[Path] = []
    for directory in map(Path, directories):
        found = [directory] if (directory / MANIFEST).is_file() else sorted(
            p.parent for p in directory.rglob(MANIFEST) if p.is_file())
        if not found:
            click.echo(f"error: {directory.as_posix()} is not a bundle and holds none (no {MANIFEST})", err=True)
            sys.exit(EXIT_USAGE)
        bundles += found
    return bundles


@click.command(name="verify-bundle")
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
def verify_bundle_command(directories):
    """Check bundles against their manifests; name every altered, missing or extra file.

    Each DIRECTORY is a bundle, or a tree of them (such as a build directory)."""
    bad = False
    for bundle in _bundles_under(directories):
        name = bundle.as_posix()
        result = verify_bundle(bundle)
        if result.ok:
            click.echo(f"ok: {name}")
            continue
        bad = True
        for finding in result.findings():  # the wording the runner's refusal uses too
            click.echo(f"{name}: {finding}", err=True)
    if bad:
        sys.exit(EXIT_MISMATCH)
