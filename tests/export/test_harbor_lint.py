"""Harbor 0.25.0 itself on the export of tasks/: `harbor lint` (default rules) finds nothing in any
of the 48 tasks, Harbor's models read task.toml and dataset.toml, its content hash is the one
dataset.toml pins, and `harbor run -p DIR` would find every task. Harbor runs in its own Python
3.12 venv (tests/helpers/harbor_venv.py finds or makes it; no Python 3.12: skipped, saying so).

Where Docker's Compose plugin is missing, `harbor lint` stops (exit 2) before checking anything;
the test then runs Harbor's own rules with the one `docker compose config` call replaced
(tests/helpers/harbor_lint_offline.py), and a negative control shows that the replacement still
finds what the compose rules look for."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers.harbor_venv import harbor_venv, lint_offline_script, why_no_harbor

COMPOSE_MISSING = "Compose checks require the Docker CLI and Compose plugin"


@pytest.fixture(scope="module")
def harbor() -> Path:
    venv = harbor_venv()
    if venv is None:
        pytest.skip(f"Harbor 0.25.0 is not available: {why_no_harbor()}")
    return venv


def _lint(harbor: Path, tasks: list[Path], *options: str) -> tuple[list[dict], str]:
    """Harbor's findings on TASKS (OPTIONS: `harbor lint`'s rule selection), and how they were had."""
    result = subprocess.run([str(harbor / "bin" / "harbor"), "lint", "--json", *options, *map(str, tasks)],
                            capture_output=True, text=True, timeout=600, check=False)
    if result.returncode == 2 and COMPOSE_MISSING in result.stderr:
        result = subprocess.run([str(harbor / "bin" / "python"), str(lint_offline_script()), *options,
                                 *map(str, tasks)],
                                capture_output=True, text=True, timeout=600, check=False)
        how = "harbor's lint_task without Docker's Compose plugin (tests/helpers/harbor_lint_offline.py)"
    else:
        how = "harbor lint"
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout or "[]"), how


def test_harbor_lint_passes_every_exported_task_of_tasks(harbor, exported):
    tasks = sorted(p.parent for p in exported.glob("*/task.toml"))
    assert len(tasks) == 48
    findings, how = _lint(harbor, tasks)
    assert findings == [], f"{how}: {json.dumps(findings, indent=1)}"


def test_the_lint_still_finds_what_it_looks_for(harbor, sample, tmp_path):
    _, task = sample
    copy = tmp_path / task.name
    shutil.copytree(task, copy)
    compose_path = copy / "environment" / "docker-compose.yaml"
    compose = yaml.safe_load(compose_path.read_text())
    compose["services"]["main"]["privileged"] = True
    compose["services"]["harness"]["volumes"] = ["/etc:/host-etc"]
    compose_path.write_text(yaml.safe_dump(compose))
    (copy / "task.toml").write_text((copy / "task.toml").read_text().replace('user = "agent"', 'user = "root"'))
    (copy / "environment" / "Dockerfile").write_text("FROM python:3.11.11-slim-bookworm\nCOPY solution/solve.sh /x\n")
    findings, how = _lint(harbor, [copy])
    assert {f["rule"] for f in findings} >= {"compose-privileged", "compose-writable-bind-mount",
                                             "compose-external-bind-mount", "agent-image-test-leak"}, how
    findings, how = _lint(harbor, [copy], "--extend-select", "root-agent")  # not a default rule in 0.25.0
    assert "root-agent" in {f["rule"] for f in findings}, how


def test_of_the_rules_off_by_default_only_the_image_digest_is_not_met(harbor, sample):
    """`--select ALL` adds root-agent (met: the agent runs as `agent`) and unpinned-image: the
    export pins its base images by version tag, not by digest (docs/harbor.md says why); Harbor
    checks only the verifier's Dockerfile here (the compose services are built, not pulled)."""
    _, task = sample
    findings, how = _lint(harbor, [task], "--select", "ALL")
    assert [(f["rule"], Path(f["path"]).relative_to(task.resolve()).as_posix()) for f in findings] == [
        ("unpinned-image", "tests/Dockerfile")], how


HARBOR_MODELS = """
import asyncio, json, sys
from pathlib import Path
from harbor.models.dataset.manifest import DatasetManifest
from harbor.models.job.config import DatasetConfig
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_verifier_environment_definition
from harbor.models.task.paths import TaskPaths
from harbor.publisher.packager import Packager
root = Path(sys.argv[1])
manifest = DatasetManifest.from_toml((root / "dataset.toml").read_text())
tasks = sorted(p for p in root.iterdir() if p.is_dir())
out = {"dataset": manifest.dataset.name, "pinned": {t.name: t.digest for t in manifest.tasks}, "hashes": {},
       "valid": [], "bundled_tests": [], "names": []}
for task in tasks:
    config = TaskConfig.model_validate_toml((task / "task.toml").read_text())
    out["names"].append(config.task.name)
    out["hashes"]["arenac/" + task.name] = "sha256:" + Packager.compute_content_hash(task)[0]
    out["valid"].append(Task.is_valid_dir(task))
    out["bundled_tests"].append(resolve_verifier_environment_definition(config, TaskPaths(task)).bundled_tests)
found = asyncio.run(DatasetConfig(path=root)._get_local_task_configs(False))
out["run_p_finds"] = sorted(Path(c.path).name for c in found)
print(json.dumps(out))
"""


def test_harbors_models_read_the_export_as_a_dataset(harbor, exported):
    result = subprocess.run([str(harbor / "bin" / "python"), "-c", HARBOR_MODELS, str(exported)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    tasks = sorted(p.name for p in exported.iterdir() if p.is_dir())
    assert seen["dataset"] == "arenac/incidents"
    assert seen["pinned"] == seen["hashes"] and len(seen["pinned"]) == 48
    assert seen["names"] == [f"arenac/{t}" for t in tasks]
    assert all(seen["valid"]) and all(seen["bundled_tests"])  # the verifier image holds tests/
    assert seen["run_p_finds"] == tasks  # `harbor run -p DIR`: every task, not dataset.toml
