"""The arenac commands of docs/kubernetes.md's "One task on kind, step by step" exist and accept the
options shown: each `.venv/bin/arenac ...` line of its shell blocks (continuations joined, the
page's own shell variables filled in) parsed by click, nothing run. The walkthrough itself needs a
kind cluster, which this machine has not; this keeps its arenac lines from drifting from the CLI."""

from __future__ import annotations

import re
import shlex

import click
import pytest

from helpers import ROOT
from helpers.arenac_args import parse_arenac
from helpers.golden import complete_variant

SECTION = "## One task on kind, step by step"
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def _arenac_lines() -> list[str]:
    text = (ROOT / "docs" / "kubernetes.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    lines = []
    for block in BLOCK.findall(section):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith(".venv/bin/arenac "):
                lines.append(line)
    return lines


def test_every_arenac_command_of_the_walkthrough_parses(monkeypatch):
    monkeypatch.chdir(ROOT)  # the page's paths are the checkout's
    lines = _arenac_lines()
    assert len(lines) >= 6, lines
    seen = set()
    for line in lines:
        filled = line.replace("$K", "--backend kubernetes --kubeconfig /tmp/arenac-kind.kubeconfig").replace(
            "$bundle", complete_variant("minimal").as_posix())
        args = shlex.split(filled)[1:]
        try:
            seen.add(parse_arenac(args))
        except click.ClickException as error:
            pytest.fail(f"docs/kubernetes.md: {line}: {error.format_message()}")
    assert {"arenac compile", "arenac run", "arenac grade", "arenac qualify"} <= seen


def test_the_parse_refuses_what_arenac_would_refuse(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(click.ClickException):
        parse_arenac(["run", complete_variant("minimal").as_posix(), "--backend", "openshift"])
