"""What an agent can read from a running stack: no credential through the admin API, probes,
/metrics, error bodies or logs; credential files private (0600); every error body in the
documented shape {"error": kind, "message": text}."""

from __future__ import annotations

import json
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from spine_services.keys import REDACTED, SERVICES
from substrate.spine_client import Spine, http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def secrets_of(spine: Spine) -> list[str]:
    data = json.loads((spine.stack.data_dir / "secrets.json").read_text())
    return [*data["postgres"].values(), *data["redis"].values(), data["auth_secret"], data["admin_token"]]


def raw(method: str, url: str, data: bytes | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, str, dict]:
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_no_credential_is_readable_through_the_admin_api_metrics_or_logs(healthy: Spine) -> None:
    secrets = secrets_of(healthy)
    admin = healthy.ep.admin_headers()  # what a granted admin call (through the broker) sees
    seen: dict[str, str] = {}
    for name in SERVICES:
        url = healthy.ep.services[name]
        for path in ("/admin/config", "/admin/event", "/healthz", "/readyz", "/metrics"):
            seen[f"{name} GET {path}"] = raw("GET", url + path, headers=admin)[1]
            seen[f"{name} GET {path} (no credential)"] = raw("GET", url + path)[1]
        # a refused change and a reload answer with the config view too
        seen[f"{name} POST /admin/config"] = raw("POST", url + "/admin/config",
                                                 b'{"REDIS_URL": "x", "AUTH_SECRET": "y"}', headers=admin)[1]
        seen[f"{name} POST /admin/reload"] = raw("POST", url + "/admin/reload", b"{}", headers=admin)[1]
    seen["fanout backlog"] = raw("GET", healthy.ep.services["fanout"] + "/admin/backlog", headers=admin)[1]
    seen["maintenance windows"] = raw("GET", healthy.ep.services["maintenance"] + "/admin/windows", headers=admin)[1]
    for log in (healthy.stack.data_dir / "logs").iterdir():
        seen[f"log {log.name}"] = log.read_text(errors="replace")
    leaks = [(where, secret) for where, text in seen.items() for secret in secrets if secret in text]
    assert not leaks, leaks

    # what is shown instead: the secret hidden, the URL kept but its password masked
    for name in ("auth", "gateway"):
        assert healthy.admin(name, "/admin/config").body["config"]["AUTH_SECRET"] == REDACTED
    redis_port = healthy.ep.redis.rsplit(":", 1)[1].split("/")[0]
    channel = healthy.admin("channel", "/admin/config").body
    assert channel["config"]["REDIS_URL"] == f"redis://default:{REDACTED}@127.0.0.1:{redis_port}/0"
    assert channel["sources"]["REDIS_URL"] == "env" and "REDIS_URL" not in channel["pending_restart"]
    fanout = healthy.admin("fanout", "/admin/config").body["config"]
    assert fanout["REDIS_FANOUT_URL"] == f"redis://fanout:{REDACTED}@127.0.0.1:{redis_port}/0"
    # and the stack still works with the real values: the gateway checks tokens auth signs
    assert healthy.send("general", "still signed", healthy.login()).status == 201


def test_credential_files_are_private(healthy: Spine) -> None:
    d: Path = healthy.stack.data_dir
    for path in (d / "endpoints.json", d / "secrets.json", d / "pgpass", d / "admin-token", d / "redis" / "redis.conf"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    healthy.stack.restart_service("redis")  # endpoints.json is rewritten: still private
    assert stat.S_IMODE((d / "endpoints.json").stat().st_mode) == 0o600


def test_every_error_body_has_the_documented_shape(healthy: Spine) -> None:
    gateway, token = healthy.ep.gateway, healthy.login()
    channel = healthy.ep.services["channel"]
    answers = {
        "send to an unknown channel": (404, healthy.send("nope", "x", token)),
        "read of an unknown channel": (404, healthy.read("nope", 0, token)),
        "read with a bad cursor": (400, http("GET", f"{gateway}/api/channels/general/messages?after=x", token=token)),
        "no token": (401, http("GET", f"{gateway}/api/unread")),
        "unknown user": (401, http("POST", f"{gateway}/api/login", {"user": "nobody"})),
        "a body that is not an object": (400, http("POST", f"{gateway}/api/login", ["ada"])),
        "unknown route": (404, http("GET", f"{gateway}/api/nothing-here")),
        "wrong method": (405, http("DELETE", f"{gateway}/api/login")),
        "no user header (direct)": (401, http("GET", f"{channel}/unread")),
        "unknown admin event": (404, healthy.admin("channel", "/admin/event", {"name": "nope", "on": True})),
        "bad admin value": (400, healthy.admin("channel", "/admin/config", {"READ_CONSISTENCY_HOLD_MS": "soon"})),
    }
    for what, (status, reply) in answers.items():
        assert reply.status == status, (what, reply)
        assert isinstance(reply.body, dict), (what, reply)
        assert isinstance(reply.body.get("error"), str) and reply.body["error"], (what, reply)
        assert isinstance(reply.body.get("message"), str) and reply.body["message"], (what, reply)
    assert answers["send to an unknown channel"][1].body["error"] == "unknown_channel"
    status, _, headers = raw("DELETE", f"{gateway}/api/login")
    assert status == 405 and headers.get("Allow") == "POST"  # the JSON body keeps the method hint
