"""A live healthy stack: public routes, probes, metrics, admin endpoints, restarts, clean stop."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
import yaml

from arenac.substrate.spine.seed import MESSAGES_PER_CHANNEL
from spine_services.keys import SERVICES
from substrate.spine_client import Spine, assert_gone, http, ports_of

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


def test_public_routes(healthy: Spine) -> None:
    gateway = healthy.ep.gateway
    assert http("POST", gateway + "/api/login", {"user": "nobody"}).status == 401
    token = healthy.login("ada")
    channels = http("GET", gateway + "/api/channels")
    assert channels.status == 200
    assert [c["name"] for c in channels.body["channels"]] == ["general", "random", "eng", "ops", "sales"]

    assert healthy.send("general", "no token", token="forged.token").status == 401
    sent = healthy.send("general", "hello", token)
    assert sent.status == 201 and sent.body["seq"] > MESSAGES_PER_CHANNEL
    assert healthy.send("nope", "x", token).status == 404

    read = healthy.read("general", sent.body["seq"] - 1, token)
    assert read.status == 200
    assert [(m["seq"], m["author"], m["body"]) for m in read.body["messages"]] == [(sent.body["seq"], "ada", "hello")]

    # fan-out reaches another member's inbox: her unread count for general goes up
    grace = healthy.login("grace")
    healthy.wait_for(lambda: http("GET", gateway + "/api/unread", token=grace).body["unread"]["general"] >= 1,
                     10, "the message in grace's inbox")
    healthy.wait_for(lambda: healthy.backlog() == 0, 10, "an empty fan-out backlog")


def test_probes_and_metrics_on_every_service(healthy: Spine) -> None:
    for name in SERVICES:
        url = healthy.ep.services[name]
        assert http("GET", url + "/healthz").body["service"] == name
        assert http("GET", url + "/readyz").status == 200
        metrics = http("GET", url + "/metrics").body
        assert f'spine_service_info{{release="1.4.2",service="{name}"}} 1.0' in metrics
    healthy.send("eng", "counted", healthy.login())
    assert 'spine_http_requests_total{route="send",status="201"}' in http("GET", healthy.ep.gateway + "/metrics").body
    assert "spine_fanout_backlog" in http("GET", healthy.ep.services["fanout"] + "/metrics").body


def test_admin_config_and_events(healthy: Spine) -> None:
    view = healthy.admin("channel", "/admin/config").body
    assert view["config"]["READ_CONSISTENCY_HOLD_MS"] == "250" and view["sources"]["READ_CONSISTENCY_HOLD_MS"] == "file"
    assert "READ_CONSISTENCY_HOLD_MS" in view["reloadable"] and "RELEASE" not in view["reloadable"]
    changed = healthy.admin("channel", "/admin/config", {"READ_CONSISTENCY_HOLD_MS": "100"})
    assert changed.status == 200 and changed.body["sources"]["READ_CONSISTENCY_HOLD_MS"] == "runtime"
    assert healthy.admin("channel", "/admin/config", {"RELEASE": "1.5.0"}).status == 400
    assert healthy.admin("channel", "/admin/config", {"READ_CONSISTENCY_HOLD_MS": "soon"}).status == 400
    assert healthy.admin("channel", "/admin/config", {"EVENTS": "read_consistency_strct"}).status == 400

    assert healthy.admin("channel", "/admin/event").body == {"events": {"read_consistency_strict": False}}
    assert healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": True}).status == 200
    assert healthy.admin("channel", "/admin/event", {"name": "no_such_event", "on": True}).status == 404
    assert healthy.admin("message", "/admin/event", {"name": "read_consistency_strict", "on": True}).status == 404

    # reload = back to file + environment for the config; an event switched at run time stays on
    # (docs/substrate.md, "What survives what"), until it is switched off or the process restarts
    reloaded = healthy.admin("channel", "/admin/reload", {})
    assert reloaded.body["config"]["READ_CONSISTENCY_HOLD_MS"] == "250"
    assert healthy.admin("channel", "/admin/event").body["events"]["read_consistency_strict"] is True
    assert healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": False}).status == 200
    assert healthy.admin("channel", "/admin/event").body["events"]["read_consistency_strict"] is False


def test_config_file_edit_then_reload(healthy: Spine) -> None:
    path: Path = healthy.stack.config_path("channel")
    original = path.read_text()
    try:
        data = yaml.safe_load(original)
        path.write_text(yaml.safe_dump({**data, "EVENTS": "read_consistency_strict",
                                        "READ_CONSISTENCY_HOLD_MS": "120"}))
        assert healthy.admin("channel", "/admin/reload", {}).status == 200
        assert healthy.admin("channel", "/admin/event").body["events"]["read_consistency_strict"] is True
        token = healthy.login()
        assert healthy.read("general", 39, token).seconds >= 0.12
    finally:
        path.write_text(original)
        healthy.admin("channel", "/admin/reload", {})


def test_restart_loses_runtime_changes_keeps_port_and_data(healthy: Spine) -> None:
    token = healthy.login()
    before = healthy.send("ops", "before restart", token).body["seq"]
    assert healthy.admin("message", "/admin/config", {"SEQUENCER_MODE": "rmw"}).status == 200
    old_pid = healthy.stack.pids()["message"]
    healthy.stack.restart_service("message")
    assert healthy.stack.pids()["message"] != old_pid
    view = healthy.admin("message", "/admin/config").body  # same URL: the port survived the restart
    assert view["config"]["SEQUENCER_MODE"] == "atomic"
    assert healthy.send("ops", "after restart", token).body["seq"] == before + 1


def test_an_event_outlives_a_reload_but_not_a_restart(healthy: Spine) -> None:
    """docs/substrate.md, "What survives what": an admin event is run-time state, which a config
    reload keeps and a restart loses; a reload that changes EVENTS itself applies the new list."""
    events = lambda: healthy.admin("channel", "/admin/event").body["events"]  # noqa: E731
    healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": True})
    assert healthy.admin("channel", "/admin/reload", {}).status == 200
    assert events() == {"read_consistency_strict": True}
    healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": False})
    healthy.admin("channel", "/admin/config", {"EVENTS": "read_consistency_strict"})  # EVENTS itself: applied
    assert events() == {"read_consistency_strict": True}
    healthy.admin("channel", "/admin/reload", {})  # drops that run-time EVENTS: back to the file's (none)
    assert events() == {"read_consistency_strict": False}
    healthy.admin("channel", "/admin/event", {"name": "read_consistency_strict", "on": True})
    healthy.stack.restart_service("channel")
    assert events() == {"read_consistency_strict": False}


def test_restart_of_postgres_and_redis(healthy: Spine) -> None:
    token = healthy.login()
    for component in ("postgres", "redis"):
        healthy.stack.restart_service(component)
        # the pools notice the broken connections; the service is usable again within seconds
        healthy.wait_for(lambda name=component: healthy.send("sales", f"after {name}", token).status == 201, 15,
                         f"sends after restarting {component}")
    assert all(item.ready for item in healthy.stack.status())


def test_two_stacks_side_by_side_and_clean_stop(healthy: Spine, make_stack) -> None:
    other = make_stack()
    assert set(other.ep.services.values()).isdisjoint(healthy.ep.services.values())
    token = other.login()
    assert other.send("general", "isolated", token).body["seq"] == MESSAGES_PER_CHANNEL + 1
    pids = [p.pid for pid in other.stack.pids().values()
            for p in (psutil.Process(pid), *psutil.Process(pid).children())]
    started = time.perf_counter()
    other.stack.stop()
    assert time.perf_counter() - started < 10
    assert_gone(pids, ports_of(other.ep))  # PostgreSQL backends included
    assert other.stack.status()[0].detail == "not started"
    assert healthy.send("general", "still here", healthy.login()).status == 201
