"""Every container of every bundle of tasks/, rendered with real Helm, runs a command that exists.

- The harness image's containers (the fault-init Job, the load generator, the grader) set no
  `command`, so the image's ENTRYPOINT (`arenac`, docker/harness.Dockerfile: the console script of
  pyproject.toml) runs with the container's args: those must walk the `arenac` click group to a
  real command, and its options must parse (click's own parser, nothing run).
- The substrate image's containers (one per spine service) run the image's ENTRYPOINT
  (`python -m spine_services`, library/substrates/spine/app/Dockerfile) with their args: the
  application's own parser must accept them (`--help` after them: parsed, nothing served), and the
  image's tag must be a release the Dockerfile can bake.
- Any other container runs an image of the substrate chart's datastores (PostgreSQL, Redis),
  whose commands are theirs; a container of any other image fails the test.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from arenac.k8s.helm import render_chart
from arenac.pipeline import compile_paths, write_bundles
from helpers import ROOT, task_paths
from helpers.arenac_args import parse_arenac
from helpers.dockerfiles import HARNESS, SUBSTRATE, exec_form
from spine_services.releases import RELEASES

NAMESPACE = "arenac-trial-1"
POD_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, list[dict]]]:
    """bundle id -> (its chart's values, every object its chart renders to)."""
    out = tmp_path_factory.mktemp("bundles")
    write_bundles(compile_paths(task_paths()), out)
    found = {}
    for manifest in sorted(out.glob("*/*/manifest.json")):
        chart = manifest.parent / "chart"
        found[manifest.parent.name] = (yaml.safe_load((chart / "values.yaml").read_text()),
                                       render_chart(chart, namespace=NAMESPACE))
    return found


def containers(objects: list[dict]) -> Iterator[tuple[dict, dict]]:
    for obj in objects:
        if obj["kind"] in POD_TEMPLATE_KINDS:
            spec = obj["spec"]["template"]["spec"]
            for container in [*spec.get("initContainers", []), *spec["containers"]]:
                yield obj, container


def test_every_bundle_renders_harness_containers(rendered):
    assert len(rendered) >= 20
    seen = {}
    for values, objects in rendered.values():
        for obj, container in containers(objects):
            if container["image"] == values["harness"]["image"]:
                seen[obj["metadata"]["name"]] = obj["kind"]
    # the fault-init Job renders for the bundles with a runtime fault at the start: some do
    assert seen == {"arenac-fault-init": "Job", "arenac-loadgen": "Deployment", "arenac-grader": "Job"}


def test_every_harness_container_runs_an_arenac_command_with_options_it_accepts(rendered):
    commands = set()
    for bundle, (values, objects) in rendered.items():
        for obj, container in containers(objects):
            if container["image"] != values["harness"]["image"]:
                continue
            where = f"{bundle}: {obj['kind']} {obj['metadata']['name']}"
            assert "command" not in container, f"{where} overrides the image's ENTRYPOINT"
            try:
                commands.add(parse_arenac(container["args"]))
            except click.ClickException as error:
                pytest.fail(f"{where}: arenac {' '.join(container['args'])}: {error.format_message()}")
    assert commands == {"arenac harness inject", "arenac harness loadgen", "arenac grade"}


def test_the_walk_refuses_what_arenac_would_refuse():
    assert parse_arenac(["harness", "inject", "--plan", "/p", "--target-namespace", "n", "--onset", "at_start"])
    for bad in (["harness", "injekt", "--plan", "/p"], ["harness", "inject", "--plann", "/p"],
                ["harness", "loadgen", "--plan", "/p", "--target", "http://x", "--time-scale", "fast"],
                ["harness", "inject", "--target-namespace", "n"], ["no-such-command"]):
        with pytest.raises(click.ClickException):
            parse_arenac(bad)


def test_the_charts_harness_image_is_the_one_the_documented_build_tags(rendered):
    images = {values["harness"]["image"] for values, _ in rendered.values()}
    assert len(images) == 1
    [image] = images
    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    assert f"docker build -f {HARNESS.dockerfile.relative_to(ROOT).as_posix()} -t {image} ." in docs


def test_every_substrate_container_runs_the_applications_entrypoint_with_args_it_accepts(rendered):
    entrypoint = exec_form(SUBSTRATE.dockerfile, "ENTRYPOINT")
    assert entrypoint is not None and entrypoint[:2] == ["python", "-m"]
    argvs: dict[tuple[str, ...], str] = {}
    for bundle, (_, objects) in rendered.items():
        for obj, container in containers(objects):
            repository, _, tag = container["image"].rpartition(":")
            if repository != "ghcr.io/arenac/spine":
                continue
            where = f"{bundle}: {obj['kind']} {obj['metadata']['name']}"
            assert "command" not in container, f"{where} overrides the image's ENTRYPOINT"
            assert tag in RELEASES, f"{where}: the image's tag {tag} is no release the Dockerfile can bake"
            argvs.setdefault(tuple(container["args"]), where)
    assert len(argvs) >= 6  # one per service at least
    for args, where in sorted(argvs.items()):
        # the application's own parser; --help last: everything before it is parsed, nothing served
        parsed = subprocess.run([sys.executable, *entrypoint[1:], *args, "--help"], cwd=SUBSTRATE.context,
                                capture_output=True, text=True, timeout=120)
        assert parsed.returncode == 0 and "usage: python -m spine_services" in parsed.stdout, (where, parsed.stderr)


def test_every_other_container_runs_a_datastore_image_of_the_substrate_chart(rendered):
    chart_values = yaml.safe_load((ROOT / "library/substrates/spine/chart/values.yaml").read_text())
    datastores = {chart_values["postgres"]["image"], chart_values["redis"]["image"]}
    for bundle, (values, objects) in rendered.items():
        for obj, container in containers(objects):
            image = container["image"]
            ours = image == values["harness"]["image"] or image.startswith("ghcr.io/arenac/spine:")
            assert ours or image in datastores, f"{bundle}: {obj['metadata']['name']} runs {image}, checked by none"


def test_the_group_walked_is_the_one_the_cli_runs(tmp_path: Path):
    """`arenac harness --help` lists the commands the chart calls (issue 13's first done-when)."""
    listed = subprocess.run([sys.executable, "-m", "arenac.cli", "harness", "--help"], capture_output=True,
                            text=True, timeout=60, cwd=ROOT)
    assert listed.returncode == 0
    assert {"inject", "loadgen"} <= {line.split()[0] for line in listed.stdout.split("Commands:")[1].splitlines()
                                     if line.strip()}
