"""The campaign files under examples/campaigns (docs/campaign.md runs them as shown) load, name
agents that can start and select specs that exist; and the loader would say so if they did not."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from arenac.campaign.spec_file import CampaignFileError, load_campaign
from arenac.runner.launch import check_agent
from helpers import ROOT

EXAMPLES = sorted((ROOT / "examples" / "campaigns").glob("*.toml"))


def test_there_are_examples():
    assert {p.name for p in EXAMPLES} >= {"smoke.toml", "reference.toml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_loads_and_everything_it_names_exists(path: Path):
    spec = load_campaign(path).spec
    assert not [problem for agent in spec.agents.values() if (problem := check_agent(agent))]
    for selector in spec.variants:
        matched = glob.glob(str(path.parent / selector.path))
        assert matched, f"{selector.path} matches nothing"
        assert all(p.endswith(".arena") or Path(p).is_dir() for p in matched)


def test_the_reference_campaign_runs_every_task_of_the_cohort():
    spec = load_campaign(ROOT / "examples" / "campaigns" / "reference.toml").spec
    (selector,) = spec.variants
    selected = {Path(p).name for p in glob.glob(str(ROOT / "examples" / "campaigns" / selector.path))}
    assert selected == {p.name for p in (ROOT / "tasks").glob("*.arena")}
    assert not selector.task and not selector.layer and not selector.access
    assert set(spec.agents.values()) >= {"oracle", "noop"} and len(spec.agents) >= 4


def test_a_broken_example_would_be_refused_at_its_line(tmp_path: Path):
    broken = tmp_path / "broken.toml"
    text = (ROOT / "examples" / "campaigns" / "smoke.toml").read_text() + "jobz = 2\n"
    broken.write_text(text)
    with pytest.raises(CampaignFileError) as caught:
        load_campaign(broken)
    (problem,) = caught.value.problems
    assert "jobz" in problem.message and problem.line == text.count("\n")
