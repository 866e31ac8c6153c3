"""The two images, checked without Docker (CI cannot build images here): the harness image
(docker/harness.Dockerfile, the repository's root as context) and the substrate image
(library/substrates/spine/app/Dockerfile, the application alone as context; tests/substrate/
test_spine_image.py checks that context in depth).

For each: the base image is pinned (an exact version tag or a digest); every COPY source is in the
build context and not kept out by its .dockerignore; the context keeps out what must never be sent
(.venv, build/, runs/, qualification/); the ENTRYPOINT is a command the image's own package
installs (a console script of its pyproject.toml, or `python -m PACKAGE` of a package it installs
that has a __main__). And the harness image holds the harness, the substrate image the application
only: nothing of arenac is sent to or installed in it."""

from __future__ import annotations

import re
import tomllib

import pytest

from helpers import ROOT
from helpers.dockerfiles import (
    HARNESS,
    IMAGES,
    SUBSTRATE,
    Image,
    copy_sources,
    exec_form,
    ignore_rules,
    ignored,
    installed_commands,
    installed_packages,
    instructions,
    sent_files,
)

NEVER_SENT = (".venv", "build", "runs", "qualification", ".git")
# an exact release (python:3.11.11-slim-bookworm) or a digest (...@sha256:...)
PINNED = re.compile(r"[\w./-]+(:\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64})")


@pytest.mark.parametrize("image", IMAGES, ids=lambda i: i.name)
def test_the_base_image_is_pinned(image: Image):
    bases = [rest.split()[0] for word, rest in instructions(image.dockerfile) if word == "FROM"]
    assert bases and all(PINNED.fullmatch(base) for base in bases), bases


@pytest.mark.parametrize("image", IMAGES, ids=lambda i: i.name)
def test_every_copy_source_is_in_the_build_context(image: Image):
    sent = sent_files(image)
    sources = copy_sources(image.dockerfile)
    assert sources
    for source in sources:
        assert not source.startswith(("/", "..")) and ".." not in source.split("/"), source
        path = image.context / source
        assert path.exists(), f"{image.dockerfile.name}: COPY {source}: not in the context"
        relative = path.relative_to(image.context).as_posix()
        kept = [f for f in sent if f == relative or f.startswith(relative.rstrip("/") + "/")]
        assert kept, f"{image.dockerfile.name}: COPY {source}: kept out by {image.ignore_file.name}"


@pytest.mark.parametrize("image", IMAGES, ids=lambda i: i.name)
def test_the_context_keeps_out_what_must_never_be_sent(image: Image):
    assert image.ignore_file.is_file()
    rules = ignore_rules(image.ignore_file.read_text())
    for name in NEVER_SENT:
        assert ignored(f"{name}/x", rules) and ignored(name, rules), name
    sent = sent_files(image)
    assert not [f for f in sent if f.split("/")[0] in NEVER_SENT or "__pycache__" in f or f.endswith(".pyc")]


def test_the_harness_context_sends_what_the_wheel_is_built_from_and_no_more():
    sent = sent_files(HARNESS)
    assert {f.split("/")[0] for f in sent} == {"pyproject.toml", "README.md", "arenac", "grammar", "library"}
    assert "arenac/cli/harness.py" in sent and "library/substrates/spine/chart/.helmignore" in sent
    assert not [f for f in sent if f.startswith(("tasks/", "tests/", "docs/", "bench/"))]


def test_the_ignore_reader_refuses_a_context_that_lets_the_venv_through():
    loose = ignore_rules("build/\nruns/\n")
    assert ignored("build/x/y", loose) and not ignored(".venv/bin/python", loose)
    whitelist = ignore_rules("*\n!arenac\n**/__pycache__\n")
    assert ignored(".venv/bin/python", whitelist) and not ignored("arenac/cli/harness.py", whitelist)
    assert ignored("arenac/__pycache__/x.pyc", whitelist)


def test_the_harness_entrypoint_is_the_arenac_command_its_package_installs():
    assert exec_form(HARNESS.dockerfile, "ENTRYPOINT") == ["arenac"]
    assert installed_commands(HARNESS.pyproject)["arenac"] == "arenac.cli:main"
    # what it installs is arenac with the extras the harness needs (the `local` runner's packages, and
    # the Kubernetes client of the harness pod's cluster backend)
    install = next(rest for word, rest in instructions(HARNESS.dockerfile) if word == "RUN")
    extras = re.search(r'pip install [^"]*"\.\[([\w,]+)\]"', install)
    assert extras, install
    declared = tomllib.loads(HARNESS.pyproject.read_text())["project"]["optional-dependencies"]
    assert set(extras.group(1).split(",")) <= set(declared)
    assert {"local", "kubernetes"} <= set(extras.group(1).split(","))
    assert exec_form(HARNESS.dockerfile, "CMD") == ["--help"]


def test_the_substrate_entrypoint_is_a_module_of_the_application():
    argv = exec_form(SUBSTRATE.dockerfile, "ENTRYPOINT")
    assert argv is not None and argv[:2] == ["python", "-m"]
    package = argv[2]
    assert package in installed_packages(SUBSTRATE.pyproject)
    assert (SUBSTRATE.context / package / "__main__.py").is_file()


def test_nothing_of_the_harness_goes_into_the_substrate_image():
    sent = sent_files(SUBSTRATE)
    assert not [f for f in sent if f.startswith("arenac") or "/arenac/" in f]
    arenac_bytes = {p.read_bytes() for p in (ROOT / "arenac").rglob("*.py") if p.stat().st_size}
    assert not [f for f in sent if (SUBSTRATE.context / f).read_bytes() in arenac_bytes]
    project = tomllib.loads(SUBSTRATE.pyproject.read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("arenac")]
    assert installed_packages(SUBSTRATE.pyproject) == ["spine_services"]
    assert all(source in ("pyproject.toml", "spine_services") for source in copy_sources(SUBSTRATE.dockerfile))
