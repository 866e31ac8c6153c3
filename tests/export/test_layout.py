"""An exported variant's layout, task.toml, compose file and Dockerfiles: the contract of
arenac/export/task.py, on revoked-grant's confined variant and on every variant of tasks/."""

from __future__ import annotations

import json
import math
import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

from arenac import __version__
from arenac.bundle import verify_bundle
from arenac.export import timing
from arenac.export.task import agent_token
from arenac.model.plan import Plan, brokered_tools
from helpers.arenac_args import parse_arenac
from helpers.trees import tree

SCHEMA = Path(__file__).with_name("harbor_task_schema.json")  # `harbor task schema` of Harbor 0.25.0


def _toml(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())


def _plan(bundle: Path) -> Plan:
    return Plan.model_validate_json((bundle / "plan.json").read_text())


def test_the_layout_of_an_exported_variant(sample):
    bundle, task = sample
    plan = _plan(bundle)
    outside_bundle = {p for p in tree(task) if not p.startswith("environment/harness/bundle/")}
    tools = {f"environment/main/tools/{t}" for t in (*brokered_tools(plan), "sleep")}
    assert outside_bundle == {
        "arenac-export.json", "task.toml", "instruction.md", "environment/docker-compose.yaml",
        "environment/harness/Dockerfile", "environment/harness/agent-token", "environment/main/Dockerfile",
        "solution/solve.sh", "tests/Dockerfile", "tests/test.sh", "tests/transcribe.py", *tools}
    files = tree(task)
    assert files["instruction.md"][0] == (bundle / "instruction.md").read_bytes()
    assert files["solution/solve.sh"] == ((bundle / "oracle" / "solve.sh").read_bytes(), 0o755)
    assert files["tests/test.sh"][1] == 0o755
    assert all(mode in (0o644, 0o755) for _, mode in files.values())
    assert all(p.stat().st_mode & 0o777 == 0o755 for p in task.rglob("*") if p.is_dir())


def test_the_harness_holds_the_whole_bundle_byte_for_byte(sample):
    bundle, task = sample
    copied = task / "environment" / "harness" / "bundle"
    assert tree(copied) == tree(bundle)
    assert verify_bundle(copied).ok  # the runner in the harness opens it


def test_task_toml_carries_the_variant_and_its_timeouts(sample):
    bundle, task = sample
    plan, config = _plan(bundle), _toml(task)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert config["task"]["name"] == f"arenac/{plan.variant}"
    assert "Nobody can send messages" in config["task"]["description"]
    assert {"arenac", "revoked-grant", "runtime", "confined"} <= set(config["task"]["keywords"])
    metadata = config["metadata"]
    assert (metadata["arenac_variant"], metadata["arenac_bundle_digest"]) == (plan.variant, manifest["bundle_digest"])
    assert (metadata["arenac_task"], metadata["arenac_version"], metadata["substrate"]) == (
        "revoked-grant", __version__, "spine")
    assert (metadata["fault_layers"], metadata["access_profile"], metadata["onset_kinds"]) == (
        ["runtime"], "confined", ["after"])
    assert metadata["time_scale"] == 1.0 and metadata["difficulty_notes"]
    assert config["agent"] == {"user": "agent", "timeout_sec": plan.timeline.agent_window_s}
    verifier = config["verifier"]
    assert verifier["environment_mode"] == "separate"
    [hook] = verifier["collect"]
    budgets = timing.budgets(plan, 1.0)
    assert hook == {"service": "harness", "timeout_sec": budgets.collect_timeout_s,
                    "command": "arenac harness finish --run-dir /var/arenac/run --out /var/arenac/out "
                               f"--timeout {budgets.finish_budget_s}"}
    # soak and one challenge kind (restart), each about a load cycle, after waiting for a cycle boundary
    cycle, soak = plan.timeline.cycle_s, plan.timeline.soak_s
    assert budgets.finish_budget_s >= cycle + soak + cycle and hook["timeout_sec"] > budgets.finish_budget_s
    assert config["artifacts"] == [{"source": "/var/arenac/out", "service": "harness"}]
    assert config["environment"]["network_mode"] == "public"
    assert config["environment"]["cpus"] >= 2 and config["environment"]["memory_mb"] >= 4096


def test_the_time_scale_scales_every_timeout(build_dir, tmp_path):
    from arenac.export.harbor import export, find_bundles

    [bundle] = [b for b in find_bundles([build_dir]) if b.variant.startswith("revoked-grant")
                and b.plan.coordinates.get("access") == "confined"]
    export([bundle], tmp_path / "out", 0.1)
    config = _toml(tmp_path / "out" / bundle.variant)
    assert config["agent"]["timeout_sec"] == math.ceil(bundle.plan.timeline.agent_window_s * 0.1)
    assert config["metadata"]["time_scale"] == 0.1
    compose = yaml.safe_load((tmp_path / "out" / bundle.variant / "environment" / "docker-compose.yaml").read_text())
    assert compose["services"]["harness"]["command"][-2:] == ["--time-scale", "0.1"]
    sleep = (tmp_path / "out" / bundle.variant / "environment" / "main" / "tools" / "sleep").read_text()
    assert "0.1" in sleep.splitlines()[-1]


def _unknown_keys(value, schema: dict, defs: dict, where: str = "") -> list[str]:
    """Keys of `value` that the (pydantic-made) schema does not declare: its objects do not say
    additionalProperties false, so jsonschema alone would let a misspelt field through."""
    if "$ref" in schema:
        return _unknown_keys(value, defs[schema["$ref"].rsplit("/", 1)[1]], defs, where)
    for branch in schema.get("anyOf", []):
        if (isinstance(value, dict) and ("properties" in branch or "$ref" in branch)) or (
                isinstance(value, list) and branch.get("type") == "array"):
            return _unknown_keys(value, branch, defs, where)
    if isinstance(value, list) and "items" in schema:
        return [k for i, item in enumerate(value) for k in _unknown_keys(item, schema["items"], defs, f"{where}[{i}]")]
    if isinstance(value, dict) and "properties" in schema:
        found = [f"{where}.{k}" for k in value if k not in schema["properties"]]
        return found + [k for key, item in value.items() if key in schema["properties"]
                        for k in _unknown_keys(item, schema["properties"][key], defs, f"{where}.{key}")]
    return []


def test_every_task_toml_is_valid_for_harbors_schema(exported):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (kubernetes-validate's dependency) is needed")
    schema = json.loads(SCHEMA.read_text())
    tasks = sorted(p.parent for p in exported.glob("*/task.toml"))
    assert len(tasks) == 48
    for task in tasks:
        config = _toml(task)
        jsonschema.validate(config, schema)
        assert _unknown_keys(config, schema, schema["$defs"]) == [], task.name
        assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*", config["task"]["name"])


def test_the_compose_file_runs_the_harness_and_the_agent_as_agreed(exported):
    for task in sorted(p.parent for p in exported.glob("*/task.toml")):
        plan = _plan(task / "environment" / "harness" / "bundle")
        compose = yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())
        assert set(compose) == {"services"} and set(compose["services"]) == {"main", "harness"}
        main_service, harness = compose["services"]["main"], compose["services"]["harness"]
        assert main_service == {"build": {"context": "./main"},
                                "depends_on": {"harness": {"condition": "service_healthy"}}}
        scale = _toml(task)["metadata"]["time_scale"]
        assert harness["build"] == {"context": "./harness"}
        assert harness["command"] == ["harness", "episode", "/var/arenac/bundle", "--listen", "0.0.0.0:7400",
                                      "--token-file", "/var/arenac/agent-token", "--run-dir", "/var/arenac/run",
                                      "--time-scale", f"{scale:g}"]
        check = harness["healthcheck"]
        assert check["test"] == ["CMD", "arenac", "harness", "status", "--run-dir", "/var/arenac/run", "--handed-over"]
        start_period = int(check["start_period"].removesuffix("s"))
        onset = max((f.onset.latest_start_s + f.manifest_within_s for f in plan.faults if not f.decoy
                     and f.onset.kind != "in_window"), default=0.0)
        assert start_period >= plan.timeline.warmup_s * scale + onset * scale + timing.PROVISION_S
        for service in (main_service, harness):  # nothing published, mounted or privileged
            assert not {"ports", "volumes", "privileged", "cap_add", "network_mode"} & set(service)


def test_the_agents_image_holds_the_tool_clients_and_nothing_of_the_task(exported):
    for task in sorted(p.parent for p in exported.glob("*/task.toml")):
        main_dir = task / "environment" / "main"
        files = set(tree(main_dir))
        assert files == {"Dockerfile"} | {f"tools/{t}" for t in (*brokered_tools(_plan(
            task / "environment" / "harness" / "bundle")), "sleep")}
        dockerfile = (main_dir / "Dockerfile").read_text()
        copies = [line.split()[-2] for line in dockerfile.splitlines() if line.startswith(("COPY", "ADD"))]
        assert copies == ["tools/"]
        assert re.search(r"^FROM python:\d+\.\d+\.\d+-slim-\w+$", dockerfile, re.M)
        assert "useradd" in dockerfile and " agent" in dockerfile
        solution, oracle_words = (task / "solution" / "solve.sh").read_bytes(), b"Golden fix"
        verdict_words = (task / "tests" / "transcribe.py").read_bytes()
        token = (task / "environment" / "harness" / "agent-token").read_text().strip()
        for path, (data, _) in tree(main_dir).items():
            assert data != solution and oracle_words not in data and data != verdict_words, path
            assert b"manifest.json" not in data and b"gates.json" not in data, path
        clients = [(main_dir / "tools" / t).read_text() for t in brokered_tools(_plan(
            task / "environment" / "harness" / "bundle"))]
        assert all(f"'harness:7400', '{token}'" in c for c in clients)  # the agent's own credential, and no other


def test_the_agent_token_is_per_variant_and_reproducible(sample):
    bundle, task = sample
    manifest = json.loads((bundle / "manifest.json").read_text())
    token = (task / "environment" / "harness" / "agent-token").read_text().strip()
    assert token == agent_token(manifest["variant"], manifest["bundle_digest"])
    assert token != agent_token(manifest["variant"] + "x", manifest["bundle_digest"])
    dockerfile = (task / "environment" / "harness" / "Dockerfile").read_text()
    assert "COPY --chown=10002:10002 --chmod=0400 agent-token /var/arenac/agent-token" in dockerfile
    assert f"FROM ghcr.io/arenac/harness:{__version__}" in dockerfile
    assert "COPY bundle/ /var/arenac/bundle/" in dockerfile


def test_the_verifier_image_installs_nothing_at_runtime(sample):
    _, task = sample
    dockerfile = (task / "tests" / "Dockerfile").read_text()
    assert re.search(r"^FROM python:\d+\.\d+\.\d+-slim-\w+$", dockerfile, re.M)
    assert "pip" not in dockerfile and "RUN" not in dockerfile
    assert "pip" not in (task / "tests" / "test.sh").read_text()


def test_the_harness_commands_the_export_names_parse_as_arenac_commands(sample):
    """The harness container's command, its healthcheck and Harbor's collect hook: each walks the
    harness image's `arenac` group to an existing command whose options click accepts."""
    _, task = sample
    compose = yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())
    harness = compose["services"]["harness"]
    [collect] = _toml(task)["verifier"]["collect"]
    commands = {parse_arenac(harness["command"]), parse_arenac(harness["healthcheck"]["test"][2:]),
                parse_arenac(shlex.split(collect["command"])[1:])}
    assert commands == {"arenac harness episode", "arenac harness status", "arenac harness finish"}
    assert harness["healthcheck"]["test"][:2] == ["CMD", "arenac"] and collect["command"].startswith("arenac ")
