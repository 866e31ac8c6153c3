"""A campaign file (arenac/campaign/spec_file.py): TOML and YAML read alike, and every mistake is
reported at its file, line and column, never as a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arenac.campaign.spec_file import CampaignFileError, load_campaign
from arenac.model.campaign import CampaignSpec

GOOD_TOML = """\
k = 3
time_scale = 0.1

[agents]
oracle = "oracle"
restarter = "adversary:restart-everything"

[[variants]]
path = "build/*/*"

[[variants]]
path = "tasks/revoked-grant.arena"
layer = ["config", "runtime"]
access = ["confined"]
"""

GOOD_YAML = """\
k: 3
time_scale: 0.1
agents:
  oracle: oracle
  restarter: adversary:restart-everything
variants:
  - build/*/*
  - path: tasks/revoked-grant.arena
    layer: [config, runtime]
    access: [confined]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(CampaignFileError) as raised:
        load_campaign(path)
    return [str(problem) for problem in raised.value.problems]


def test_toml_and_yaml_say_the_same_and_a_bare_path_is_a_selector(tmp_path):
    toml = load_campaign(_write(tmp_path, "c.toml", GOOD_TOML)).spec
    yaml = load_campaign(_write(tmp_path, "c.yaml", GOOD_YAML)).spec
    assert toml == yaml
    assert toml.k == 3 and toml.jobs == 1 and toml.retries == 1 and toml.backend == "local"
    assert toml.variants[0].path == "build/*/*" and toml.variants[0].layer == ()
    assert toml.variants[1].layer == ("config", "runtime") and toml.variants[1].access == ("confined",)


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_every_schema_mistake_is_at_its_line_and_column(tmp_path, suffix):
    if suffix == ".toml":
        text = GOOD_TOML.replace("k = 3", "k = 0").replace('oracle = "oracle"', '"Bad Name" = "oracle"')
        text = text.replace('access = ["confined"]', 'access = ["confined"]\ncolour = "red"').replace(
            '["config", "runtime"]', '["config", "cfg"]')
        expected = ["c.toml:1:1: k: input should be greater than or equal to 1",
                    "c.toml:5:1: agents: 'Bad Name' is not an agent name",
                    "c.toml:13:1: variants[1].layer[1]: input should be 'config', 'runtime' or 'image'",
                    "c.toml:15:1: variants[1].colour: unknown key"]
    else:
        text = GOOD_YAML.replace("k: 3", "k: 0").replace("  oracle: oracle", "  Bad Name: oracle")
        text = text.replace("    access: [confined]", "    access: [confined]\n    colour: red").replace(
            "[config, runtime]", "[config, cfg]")
        expected = ["c.yaml:1:1: k: input should be greater than or equal to 1",
                    "c.yaml:4:3: agents: 'Bad Name' is not an agent name",
                    "c.yaml:9:21: variants[1].layer[1]: input should be 'config', 'runtime' or 'image'",
                    "c.yaml:11:5: variants[1].colour: unknown key"]
    problems = _problems(_write(tmp_path, f"c{suffix}", text))
    shown = [p.replace(tmp_path.as_posix() + "/", "") for p in problems]
    assert len(shown) == len(expected), shown
    for line, prefix in zip(shown, expected, strict=True):
        assert line.startswith(prefix), (line, prefix)


def test_a_missing_key_is_at_its_table_and_an_empty_list_is_named(tmp_path):
    problems = _problems(_write(tmp_path, "c.toml", 'variants = []\n\n[agents]\n'))
    shown = [p.replace(tmp_path.as_posix() + "/", "") for p in problems]
    assert shown[0].startswith("c.toml:1:1: variants: ") and "at least 1" in shown[0]
    assert shown[1].startswith("c.toml:3:1: agents: ") and "at least 1" in shown[1]


@pytest.mark.parametrize(("name", "text", "where", "what"), [
    ("c.toml", "k = \n", ":1:5: ", "TOML syntax: "),
    ("c.toml", "[agents]\noracle = oracle\n", ":2:", "TOML syntax: "),
    ("c.yaml", "k: [\n", ":2:1: ", "YAML syntax: "),
    ("c.json", "{}", ":1:1: ", "a campaign file is TOML or YAML"),
])
def test_a_syntax_error_is_where_the_parser_stopped(tmp_path, name, text, where, what):
    (problem,) = _problems(_write(tmp_path, name, text))
    assert problem.startswith((tmp_path / name).as_posix() + where) and what in problem, problem


def test_a_file_that_is_not_utf8_is_one_problem(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"k = 1\n\xff\xfe\n")
    (problem,) = _problems(path)
    assert "cannot be read" in problem


def test_the_schema_is_the_models_and_names_every_key(cli):
    result = cli("schema", "campaign")
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema == json.loads(json.dumps(CampaignSpec.model_json_schema()))
    assert set(schema["properties"]) == {"agents", "variants", "k", "jobs", "time_scale", "backend", "kubeconfig",
                                         "context", "retries", "agent_ro"}
    assert schema["properties"]["backend"]["enum"] == ["local", "kubernetes"]
    assert schema["additionalProperties"] is False
    assert json.loads(cli("schema").output)["title"] != schema["title"]  # plan.json's, by default
