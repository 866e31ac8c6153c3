"""Compiled bundles' oracle/solve.sh, run end to end through the brokered tools against a live stack
configured from the bundle (its chart values, its rbac/, its plan's access surface), with the
fault injected first; the fix must show on the stack, and every command must be allowed."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from arenac.broker import load_rbac_dir
from arenac.model.access import AccessSurface
from arenac.pipeline import compile_paths, write_bundles
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack
from broker.brokered import Episode, start_stack, stop_stack
from substrate.spine_client import Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("build")
    tasks = sorted(str(path) for path in (ROOT / "tasks").glob("*.arena"))
    return [written.path for written in write_bundles(compile_paths(tasks), out)]


def find(bundles: list[Path], task: str, **coordinates: str) -> tuple[Path, dict[str, Any]]:
    for path in bundles:
        plan = json.loads((path / "plan.json").read_text())
        wanted = {key.replace("__", "."): value for key, value in coordinates.items()}
        if plan["task"] == task and all(plan["coordinates"].get(k) == v for k, v in wanted.items()):
            return path, plan
    raise AssertionError(f"no variant of {task} with {coordinates}")


def oracle_episode(episode: Callable[..., Episode], bundle: Path, plan: dict[str, Any], stack) -> Episode:
    return episode(AccessSurface.model_validate(plan["access"]), rbac=load_rbac_dir(bundle / "rbac"),
                   tools=[*plan["tools"], "wait-until-healthy"], on_stack=stack, time_scale=0.1)


def solve(e: Episode, bundle: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["sh", str(bundle / "oracle" / "solve.sh")], env=e.env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def inject(stack, plan: dict[str, Any], fault: str) -> None:
    """The runtime actions of one fault, as the runner's fault injection performs them."""
    for action in next(f for f in plan["faults"] if f["name"] == fault)["inject"]:
        if action["kind"] == "admin":
            reply = http(action["method"], stack.endpoints.services[action["service"]] + action["path"], action["body"],
                         headers=stack.endpoints.admin_headers())
            assert reply.status == 200, reply
        elif action["kind"] == "sql":
            Spine(stack).sql(action["statement"], role=action["role"])
        else:
            raise AssertionError(f"the test does not inject {action['kind']} actions")


@pytest.fixture
def bundle_stack() -> Iterator[Callable[[Path, dict[str, Any]], Any]]:
    started = []

    def make(bundle: Path, plan: dict[str, Any]) -> SpineStack:
        values = yaml.safe_load((bundle / plan["chart"] / "values.yaml").read_text())[plan["values_key"]]
        stack = start_stack(SpineSpec.from_values(values))
        started.append(stack)
        return stack

    yield make
    for stack in started:
        stop_stack(stack)


def test_config_layer_oracle_with_scoped_kubectl(bundles: list[Path], bundle_stack, episode, tmp_path: Path) -> None:
    bundle, plan = find(bundles, "maintenance-peaks", access="scoped_kubectl", maint__layer="config")
    stack = bundle_stack(bundle, plan)
    maintenance = stack.endpoints.services["maintenance"]
    reply = http("GET", maintenance + "/admin/config", headers=stack.endpoints.admin_headers())
    assert reply.body["config"]["MAINT_OFFSET_S"] == "20.0"  # the fault (normalised as a float)
    before = stack.pids()["maintenance"]
    e = oracle_episode(episode, bundle, plan, stack)

    solve(e, bundle, tmp_path)

    assert yaml.safe_load(stack.config_path("maintenance").read_text())["MAINT_OFFSET_S"] == "40"
    running = http("GET", maintenance + "/admin/config", headers=stack.endpoints.admin_headers()).body
    assert running["config"]["MAINT_OFFSET_S"] == "40.0" and running["config"]["MAINT_DURATION_S"] == "6.0"
    assert running["sources"]["MAINT_OFFSET_S"] == "file" and stack.pids()["maintenance"] != before
    assert [(r["tool"], r["argv"][:2], r["allowed"]) for r in e.actions] == [
        ("kubectl", ["patch", "configmap"], True), ("kubectl", ["rollout", "restart"], True),
        ("kubectl", ["rollout", "status"], True), ("wait-until-healthy", ["--timeout", "90s"], True),
        ("declare_repair_complete", [], True)]
    assert e.declared == [1.0]


def test_runtime_layer_oracles_with_confined_access(bundles: list[Path], stack, episode, tmp_path: Path) -> None:
    # db-sql: the revoked grant
    bundle, plan = find(bundles, "revoked-grant", access="confined", grant__layer="runtime")
    spine = Spine(stack)
    token = spine.login("grace")
    inject(stack, plan, "grant")
    assert spine.send("general", "before", token).status == 500
    e = oracle_episode(episode, bundle, plan, stack)
    solve(e, bundle, tmp_path)
    assert spine.send("general", "after", token).status == 201
    assert [(r["tool"], r["allowed"]) for r in e.actions] == [
        ("db-sql", True), ("wait-until-healthy", True), ("declare_repair_complete", True)]
    assert e.actions[0]["reason"] == "role spine_operator" and e.declared == [1.0]

    # admin-api: a strict-read event switched on at run time (and db-sql: a leaked lock)
    bundle, plan = find(bundles, "locks-and-slow-reads", access="confined", strict__layer="runtime")
    inject(stack, plan, "strict")
    channel = stack.endpoints.services["channel"]
    reply = http("GET", channel + "/admin/event", headers=stack.endpoints.admin_headers())
    assert reply.body["events"]["read_consistency_strict"] is True
    e = oracle_episode(episode, bundle, plan, stack)
    solve(e, bundle, tmp_path)
    reply = http("GET", channel + "/admin/event", headers=stack.endpoints.admin_headers())
    assert reply.body["events"]["read_consistency_strict"] is False
    assert [r["tool"] for r in e.actions if r["allowed"]] == [
        "db-sql", "db-sql", "admin-api", "wait-until-healthy", "declare_repair_complete"]
    assert len(e.actions) == 5 and e.declared == [1.0]
    spine.sql("ALTER DATABASE spine RESET idle_in_transaction_session_timeout")  # leave the shared stack as found

    assert os.environ.get("PATH", "").split(":")[0] != str(e.tools_dir)  # the tools never leaked into ours
