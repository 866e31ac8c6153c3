"""admin-api, db-sql, wait-until-healthy and declare_repair_complete through the installed client
tools, and the broker's own guards: the token, the episode's tool list, the action log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from arenac.broker import ActionLog, Broker
from arenac.broker.client import call
from broker.brokered import Episode
from substrate.spine_client import http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def test_admin_api_only_on_granted_services_and_paths(episode: Callable[..., Episode]) -> None:
    e = episode("confined")
    done = e.run("admin-api", "channel", "POST", "/admin/event", '{"name": "read_consistency_strict", "on": true}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"]["read_consistency_strict"] is True
    channel = e.cluster.stack.endpoints.services["channel"]
    reply = http("GET", channel + "/admin/event", headers=e.cluster.stack.endpoints.admin_headers())
    assert reply.body["events"]["read_consistency_strict"] is True
    assert e.run("admin-api", "channel", "POST", "/admin/event", '{"name": "read_consistency_strict", "on": false}') \
        .returncode == 0
    reply = http("GET", channel + "/admin/event", headers=e.cluster.stack.endpoints.admin_headers())
    assert reply.body["events"]["read_consistency_strict"] is False

    assert json.loads(e.run("admin-api", "fanout", "GET", "/admin/backlog").stdout)["backlog"] >= 0
    bad_value = e.run("admin-api", "message", "POST", "/admin/config", '{"DB_POOL_SIZE": "lots"}')
    assert bad_value.returncode == 1 and "HTTP 400" in bad_value.stderr and "bad_config" in bad_value.stdout

    for argv, why in [
        (("gateway", "GET", "/admin/config"), "grants no admin API of service 'gateway'"),
        (("message", "GET", "/metrics"), "GET /metrics on message is not granted"),
        (("message", "GET", "/admin/config/../../metrics"), "is not granted"),
        (("message", "GET", "/admin/%63onfig"), "is not granted"),
        (("fanout", "GET", "/admin/backlog/"), "is not granted"),
    ]:
        denied = e.run("admin-api", *argv)
        assert denied.returncode == 1 and why in denied.stderr, (argv, denied.stderr)
    assert [r["allowed"] for r in e.actions] == [True, True, True, True] + [False] * 5
    assert episode("shell", tools=["admin-api"]).call("admin-api", "message", "GET", "/admin/config").allowed is False


def test_db_sql_only_with_the_surface_role(episode: Callable[..., Episode]) -> None:
    e = episode("confined")
    who = e.run("db-sql", "-A", "-t", "-c", "SELECT current_user")
    assert (who.returncode, who.stdout) == (0, "spine_operator\n")
    table = e.run("db-sql", "--role", "spine_operator", "-c", "SELECT name FROM channels ORDER BY id LIMIT 2")
    assert table.stdout.splitlines()[:4] == ["  name   ", "---------", " general", " random"]
    piped = e.run("db-sql", input="SELECT 40 + 2 AS answer")
    assert "42" in piped.stdout
    failing = e.run("db-sql", "-c", "SELECT * FROM no_such_table")
    assert failing.returncode == 1 and 'relation "no_such_table" does not exist' in failing.stderr

    superuser = e.run("db-sql", "--role", "postgres", "-c", "SELECT 1")
    assert superuser.returncode == 1 and "database role 'postgres' is not granted" in superuser.stderr
    meta = e.run("db-sql", "-c", "\\! id")
    assert meta.returncode == 1 and "meta-commands" in meta.stderr
    options = e.run("db-sql", "-h", "10.0.0.1", "-c", "SELECT 1")
    assert options.returncode == 1 and "unsupported argument" in options.stderr
    assert [r["allowed"] for r in e.actions] == [True, True, True, True, False, True, True]
    assert e.actions[-3]["reason"] == ("db-sql: forbidden: database role 'postgres' is not granted "
                                       "(granted: spine_operator)")

    shell = episode("shell", tools=["db-sql"]).call("db-sql", "-c", "SELECT 1")
    assert not shell.allowed and "grants no database role" in shell.stderr


def test_declare_and_wait_until_healthy(episode: Callable[..., Episode]) -> None:
    e = episode("confined", time_scale=0.1)
    healthy = e.run("wait-until-healthy", "--timeout", "30s")
    assert healthy.returncode == 0 and healthy.stdout.startswith("healthy after")

    stack = e.cluster.stack  # a service that cannot start: waits, then fails naming it
    stack.set_service_image("auth", "0.0.0")
    try:
        try:
            stack.restart_service("auth")
        except RuntimeError:
            pass
        unhealthy = e.run("wait-until-healthy", "--timeout", "1s")
        assert unhealthy.returncode == 1 and "auth is not ready" in unhealthy.stderr
    finally:
        stack.set_service_image("auth", "1.4.2")
        stack.restart_service("auth")

    assert e.declared == []
    assert e.run("declare_repair_complete").returncode == 0
    assert e.run("declare_repair_complete").stdout == "the repair was already declared complete\n"
    assert e.declared == [1.0]  # the runner hears it once
    # after the declaration nothing more lands, not even a call racing the freeze
    late = e.run("admin-api", "channel", "GET", "/admin/event")
    assert late.returncode == 1 and "declared complete; no further actions" in late.stderr
    assert (e.actions[-1]["tool"], e.actions[-1]["allowed"], e.actions[-1]["reason"]) == (
        "admin-api", False, "after the declaration")


def test_token_tool_list_and_action_log(episode: Callable[..., Episode], tmp_path: Path) -> None:
    e = episode("confined", tools=["admin-api", "declare_repair_complete"])
    assert e.call("db-sql", "-c", "SELECT 1").code == 127  # db-sql is not this episode's tool
    assert not (e.tools_dir / "db-sql").exists() and (e.tools_dir / "admin-api").exists()
    forged = call(e.broker.address, "not-the-token", "declare_repair_complete", [])
    assert forged["code"] == 1 and "Unauthorized" in forged["stderr"] and e.declared == []
    assert [(r["tool"], r["allowed"], r["reason"]) for r in e.actions] == [
        ("db-sql", False, "tool not granted"), ("declare_repair_complete", False, "bad broker token")]
    script = (e.tools_dir / "admin-api").read_text()
    assert e.broker.token in script and "postgresql://" not in script and "redis://" not in script

    log = tmp_path / "actions.jsonl"
    clock = iter([1.5, 2.25])
    logged = Broker(e.broker.toolbox, on_action=ActionLog(log), clock=lambda: next(clock))
    logged.call("admin-api", ["message", "GET", "/admin/config"])
    logged.call("kubectl", ["get", "pods"])
    lines = log.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"t": 1.5, "tool": "admin-api", "argv": ["message", "GET", "/admin/config"], "allowed": True,
         "reason": "GET message/admin/config"},
        {"t": 2.25, "tool": "kubectl", "argv": ["get", "pods"], "allowed": False,
         "reason": 'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:arenac:arenac-agent" '
                   'cannot list resource "pods" in API group "" in the namespace "arenac"'}]
    assert lines[0] == json.dumps(json.loads(lines[0]), sort_keys=True)


def test_the_freeze_ends_tool_calls_still_running(episode: Callable[..., Episode]) -> None:
    """A db-sql made before the declaration must not hold connections (or locks) after the freeze."""
    import threading
    import time

    e = episode("confined")
    results = []
    call = threading.Thread(target=lambda: results.append(e.call("db-sql", "-c", "SELECT pg_sleep(60)")))
    started = time.monotonic()
    call.start()
    while time.monotonic() - started < 20 and not e.broker.toolbox.inflight._running:
        time.sleep(0.05)
    time.sleep(0.5)  # psql has connected and sleeps
    assert e.broker.toolbox.inflight.end_all() == 1
    call.join(timeout=10)
    assert not call.is_alive() and time.monotonic() - started < 30
    assert results[0].code != 0  # cut short, not a minute later
    late = e.call("db-sql", "-c", "SELECT 1")
    assert late.code == 1 and "access is closed" in late.stderr
