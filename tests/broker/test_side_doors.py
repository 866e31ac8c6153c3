"""No side doors around the brokered surface (issue 9, classes 2 and 6), on a live stack:

- the admin APIs need the stack's credential; the broker (admin-api, exec into a service) adds
  it and logs every call; nothing an exec hands over carries it or any datastore superuser's;
- Redis runs unprivileged; an exec into redis is the ACL user `agent` behind the broker's command
  gate: no MODULE, DEBUG, CONFIG SET dir, SHUTDOWN, scripts, password changes, other users;
- psql in the postgres pod gets the operator's roles only; the operator cannot become superuser;
- the harness still queries PostgreSQL and Redis while agent-usable roles hold every connection
  they can get.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import psutil
import pytest
import redis

from arenac.broker.redisgate import check
from arenac.runner.harness_io import HarnessIO
from arenac.substrate.spine.driver import DRIVER
from broker.brokered import Episode
from spine_services.keys import SERVICES
from substrate.spine_client import Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def secrets_of(e: Episode) -> list[str]:
    data = json.loads((e.cluster.stack.data_dir / "secrets.json").read_text())
    return [*data["postgres"].values(), *data["redis"].values(), data["auth_secret"], data["admin_token"]]


def kubectl(e: Episode, *argv: str) -> tuple[int, str, str]:
    result = e.call("kubectl", *argv)
    return result.code, result.stdout, result.stderr


def redis_cli(e: Episode, *words: str) -> str:
    _, out, err = kubectl(e, "exec", "deploy/spine-redis", "--", "redis-cli", *words)
    return out + err


# -- admin APIs ------------------------------------------------------------------------------
def test_admin_apis_need_the_credential_and_probes_stay_open(stack) -> None:
    endpoints = stack.endpoints
    for name in SERVICES:
        url = endpoints.services[name]
        for method, path, body in (("GET", "/admin/config", None), ("POST", "/admin/reload", {}),
                                   ("POST", "/admin/event", {"name": "x", "on": True}), ("GET", "/admin/nope", None)):
            refused = http(method, url + path, body)
            assert (refused.status, refused.body["error"]) == (401, "unauthorized"), (name, path, refused)
            wrong = http(method, url + path, body, headers={"Authorization": "Bearer not-the-token"})
            assert wrong.status == 401, (name, path)
        assert http("GET", url + "/%61dmin/config").status == 401  # the decoded path is what counts
        assert http("GET", url + "/admin/config", headers=endpoints.admin_headers()).status == 200
        for probe in ("/healthz", "/readyz", "/metrics"):
            assert http("GET", url + probe).status == 200, (name, probe)
    assert http("GET", endpoints.gateway + "/api/channels").status == 200


def test_admin_api_through_the_broker_works_and_is_logged(episode: Callable[..., Episode]) -> None:
    e = episode("confined")
    done = e.run("admin-api", "message", "GET", "/admin/config")
    assert done.returncode == 0 and json.loads(done.stdout)["service"] == "message", done.stderr
    assert e.actions[-1] == {"t": e.actions[-1]["t"], "tool": "admin-api", "argv": ["message", "GET", "/admin/config"],
                             "allowed": True, "reason": "GET message/admin/config"}
    assert not any(secret in done.stdout for secret in secrets_of(e))


def test_exec_into_a_service_reaches_its_own_admin_api_through_the_broker(episode: Callable[..., Episode]) -> None:
    e = episode("shell")
    code, out, err = kubectl(e, "exec", "deploy/spine-channel", "--", "curl", "-fsS", "-X", "POST",
                             "-H", "content-type: application/json",
                             "-d", '{"name": "read_consistency_strict", "on": true}',
                             "http://localhost:8080/admin/event")
    assert code == 0 and json.loads(out)["events"]["read_consistency_strict"] is True, err
    code, out, _ = kubectl(e, "exec", "deploy/spine-channel", "--", "curl", "-fsS", "-X", "POST",
                           "-H", "content-type: application/json",
                           "-d", '{"name": "read_consistency_strict", "on": false}',
                           "http://spine-channel:8080/admin/event")
    assert code == 0 and json.loads(out)["events"]["read_consistency_strict"] is False
    inner = [r for r in e.actions if r["tool"] == "exec:admin-api"]
    assert [(r["argv"], r["allowed"]) for r in inner] == [(["channel", "POST", "/admin/event"], True)] * 2
    assert inner[0]["reason"].startswith(f"via {e.pod('channel')}: HTTP 200")
    # the exec sees no credential: not in its environment, not in any file it can read
    code, out, _ = kubectl(e, "exec", "deploy/spine-channel", "--", "sh", "-c",
                           "env; cat \"$HOME\"/* \"$HOME\"/bin/* 2>/dev/null; "
                           f"cat {e.cluster.stack.data_dir}/admin-token {e.cluster.stack.data_dir}/secrets.json 2>&1")
    assert not [secret for secret in secrets_of(e) if secret in out], out
    # sandboxed, the stack's data directory does not exist for the exec; unsandboxed, file modes refuse it
    assert "Permission denied" in out or "No such file or directory" in out or os.geteuid() != 0


# -- Redis -----------------------------------------------------------------------------------
def test_redis_runs_unprivileged(stack) -> None:
    process = psutil.Process(stack.pids()["redis"])
    if os.geteuid() == 0:
        assert process.uids().real != 0 and process.uids().effective != 0
        assert process.username() == "arenac-redis"
    passwords = json.loads((stack.data_dir / "secrets.json").read_text())["redis"].values()
    assert not [p for p in passwords if p in " ".join(process.cmdline())]


def test_exec_into_redis_is_the_agent_user_behind_the_gate(episode: Callable[..., Episode]) -> None:
    e = episode("shell")
    assert redis_cli(e, "ACL", "WHOAMI").strip() == "agent"
    for words, expect in (
        (("MODULE", "LOAD", "/tmp/evil.so"), "NOPERM"),
        (("CONFIG", "SET", "dir", "/tmp"), "NOPERM"),
        (("CONFIG", "SET", "maxmemory", "1gb", "dir", "/tmp"), "NOPERM"),
        (("CONFIG", "REWRITE"), "NOPERM"),
        (("DEBUG", "SLEEP", "0"), "NOPERM"),
        (("SHUTDOWN", "NOSAVE"), "NOPERM"),
        (("EVAL", "return redis.call('CONFIG','SET','dir','/tmp')", "0"), "NOPERM"),
        (("ACL", "SETUSER", "agent", "+@all"), "NOPERM"),
        (("ACL", "SETUSER", "default", "on"), "NOPERM"),
        (("ACL", "SETUSER", "fanout", ">known-now"), "NOPERM"),
        (("ACL", "SETUSER", "fanout", "nopass"), "NOPERM"),
        (("ACL", "DELUSER", "fanout"), "NOPERM"),
        (("AUTH", "harness", "guess"), "NOPERM"),
        (("FLUSHALL",), "NOPERM"),  # the gate passes it; the agent user's ACLs refuse it
    ):
        assert expect in redis_cli(e, *words), words
    # what the library's repairs need works
    assert redis_cli(e, "CONFIG", "SET", "maxmemory", "268435456").strip() == "OK"
    assert redis_cli(e, "CONFIG", "GET", "maxmemory").split() == ["maxmemory", "268435456"]
    assert redis_cli(e, "ACL", "SETUSER", "fanout", "-@list").strip() == "OK"
    assert redis_cli(e, "ACL", "SETUSER", "fanout", "+@list").strip() == "OK"
    assert "+@list" in redis_cli(e, "ACL", "GETUSER", "fanout")
    assert redis_cli(e, "LLEN", "spine:fanout").strip().isdigit()
    assert redis_cli(e, "-h", "spine-redis", "-p", "6379", "PING").strip() == "PONG"  # -h cannot route around
    logged = [r for r in e.actions if r["tool"] == "exec:redis"]
    assert (["CONFIG", "SET", "dir", "/tmp"], False) in [(r["argv"], r["allowed"]) for r in logged]
    assert (["ACL", "SETUSER", "fanout", "+@list"], True) in [(r["argv"], r["allowed"]) for r in logged]
    # the redis pod hands over no password: the server's own port refuses a bare client
    port = urlsplit(e.cluster.stack.endpoints.redis).port
    _, out, _ = kubectl(e, "exec", "deploy/spine-redis", "--", "sh", "-c",
                        f"env; cat \"$HOME\"/bin/redis-cli; "
                        f"printf 'PING\\r\\n' | timeout 2 nc 127.0.0.1 {port} || true")
    assert not [secret for secret in secrets_of(e) if secret in out], out
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        assert sock.recv(200).startswith(b"-NOAUTH")


def test_the_gate_rules() -> None:
    assert check(["get", "k"]) == "" and check(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]) == ""
    assert check(["config", "set", "Dir", "/"]) and check(["config", "set"]) and check(["CONFIG", "RESETSTAT"])
    app = frozenset({"fanout"})  # spine's application user (its driver's redis_acl_users)
    assert check(["ACL", "SETUSER", "fanout", "~spine:*", "+rpop"], app) == "" and check(["ACL", "LOAD"], app)
    assert check(["ACL", "SETUSER", "fanout", "#" + "0" * 64], app)
    assert check(["ACL", "SETUSER", "fanout", "resetpass"], app)
    assert check(["ACL", "SETUSER", "default", "+@all"], app) and check(["ACL", "SETUSER", "harness", "on"], app)
    assert check(["ACL", "SETUSER", "fanout", "+rpop"]), "no user is the agent's unless the substrate says so"
    assert check(["HELLO", "3", "AUTH", "default", "x"]) and check(["HELLO", "3"]) == ""
    assert check(["fcall", "f", "0"]) and check(["script", "load", "x"]) and check([])


# -- PostgreSQL ------------------------------------------------------------------------------
def test_psql_in_the_postgres_pod_has_the_operators_roles_only(episode: Callable[..., Episode]) -> None:
    e = episode("shell")
    code, out, _ = kubectl(e, "exec", "statefulset/spine-postgres", "--", "psql", "-tAc", "SELECT current_user")
    assert (code, out.strip()) == (0, "spine_operator")
    for role in ("postgres", "spine_admin", "spine_app"):
        code, out, err = kubectl(e, "exec", "statefulset/spine-postgres", "--",
                                 "psql", "-U", role, "-w", "-tAc", "SELECT 1")
        assert code != 0 and "password" in err, (role, out, err)
    code, out, _ = kubectl(e, "exec", "statefulset/spine-postgres", "--", "sh", "-c", 'env; cat "$PGPASSFILE"')
    assert [line.split(":")[3] for line in out.splitlines() if line.startswith("127.0.0.1:")] == \
        ["spine_operator", "spine_readonly"]
    data = json.loads((e.cluster.stack.data_dir / "secrets.json").read_text())
    assert not [role for role in ("postgres", "spine_admin", "spine_app") if data["postgres"][role] in out]


@pytest.mark.parametrize("statement", [
    "ALTER ROLE spine_operator SUPERUSER",
    "CREATE ROLE intruder LOGIN SUPERUSER",
    "GRANT spine_admin TO spine_operator",
    "GRANT postgres TO spine_operator",
    "GRANT pg_execute_server_program TO spine_operator",
    "GRANT pg_write_server_files TO spine_operator",
    "SET ROLE spine_admin",
    "ALTER ROLE spine_operator CONNECTION LIMIT -1",
    "COPY (SELECT 1) TO PROGRAM 'id'",
])
def test_the_operator_cannot_become_superuser(stack, statement: str) -> None:
    with pytest.raises(asyncpg.PostgresError):
        Spine(stack).sql(statement, role="spine_operator")
    assert Spine(stack).sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'spine_operator'")[0][0] is False


def test_the_harness_queries_while_agent_roles_hold_every_connection(stack) -> None:
    endpoints = stack.endpoints
    dsn = urlsplit(endpoints.postgres["spine_operator"])
    held: list[asyncpg.Connection] = []

    async def hog(user: str, password: str) -> str:
        """Connections as `user` until the server refuses one; the refusal's message."""
        while True:
            try:
                held.append(await asyncpg.connect(host="127.0.0.1", port=dsn.port, user=user, password=password,
                                                  database="spine", timeout=10))
            except (asyncpg.PostgresError, OSError) as exc:
                return str(exc)

    async def release() -> None:
        for connection in held:
            await connection.close()

    loop = asyncio.new_event_loop()
    spine = Spine(stack)
    io = HarnessIO(endpoints, DRIVER)
    try:
        assert io.redis("PING") is True  # the harness's own Redis connection, opened before the agent acts
        # the operator's own limit, then roles it creates (CREATEROLE) to take every other slot
        spine.sql("CREATE ROLE hog LOGIN PASSWORD 'hog'", role="spine_operator")
        assert "too many connections for role" in loop.run_until_complete(hog("spine_operator", dsn.password))
        assert "reserved" in loop.run_until_complete(hog("hog", "hog"))
        assert len(held) >= 100
        # the harness: snapshots (postgres), fault injection (spine_admin), all still served
        assert io.query("SELECT count(*) FROM channels") == [(5,)]
        io.sql("spine_admin", "SELECT 1")
        # Redis: the agent fills maxclients (lowered here to keep the test small); the harness's
        # connection is already open
        io.redis("CONFIG", "SET", "maxclients", "40")
        agents = []
        with pytest.raises(redis.ConnectionError):
            for _ in range(60):
                client = redis.Redis.from_url(endpoints.redis_agent, socket_timeout=5)
                client.ping()
                agents.append(client)
        assert io.redis("ACL", "WHOAMI") == b"harness" and io.redis("LLEN", "spine:fanout") >= 0
        for client in agents:
            client.close()
    finally:
        loop.run_until_complete(release())
        loop.close()
        io.redis("CONFIG", "SET", "maxclients", "10000")
        io.close()
        spine.sql("DROP ROLE IF EXISTS hog")


def test_an_exec_sees_nothing_of_the_checkout_and_only_its_own_processes(episode: Callable[..., Episode]) -> None:
    """The shell an agent gets through `kubectl exec` is confined like the agent: no answer key in a
    checkout (specs, golden bundles with their solve.sh), no harness process in /proc."""
    from arenac.sandbox import probe

    e = episode("shell")
    checkout = Path(__file__).resolve().parents[2]
    _, out, _ = kubectl(e, "exec", "deploy/spine-channel", "--", "sh", "-c",
                        f"ls {checkout}/tasks 2>&1; ls /proc | grep -c '^[0-9]'")
    if probe("auto").mechanism != "bwrap":
        pytest.skip("bubblewrap is not usable here: an exec is confined by file modes only")
    assert "revoked-grant.arena" not in out and "No such file or directory" in out, out
    assert int(out.strip().splitlines()[-1]) <= 4, out  # sh, ls/grep: nothing of the harness
