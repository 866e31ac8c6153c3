"""What allowed kubectl calls do to a live stack: ConfigMaps are the config files, rollouts restart
with the new template, images are releases, pods are processes; output as kubectl prints it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest
import yaml

from broker.brokered import Episode, role, rule
from substrate.spine_client import http

pytestmark = pytest.mark.live  # starts a stack, an episode or timed load


@pytest.fixture
def operator(episode: Callable[..., Episode]) -> Episode:
    """An episode whose Role grants everything the local cluster models (not a library profile)."""
    return episode("shell", rbac=role(rule(["", "apps"], ["*"], ["*"])))


def kubectl(e: Episode, *argv: str, ok: bool = True) -> str:
    result = e.call("kubectl", *argv)
    assert (result.code == 0) == ok, (argv, result)
    return result.stdout if ok else result.stderr


def admin_config(e: Episode, service: str) -> dict:
    assert e.cluster.stack.endpoints is not None
    return http("GET", e.cluster.stack.endpoints.services[service] + "/admin/config",
                headers=e.cluster.stack.endpoints.admin_headers()).body


def test_configmap_patch_takes_effect_on_rollout_restart(operator: Episode) -> None:
    e = operator
    before = e.pod("message")
    out = kubectl(e, "patch", "configmap", "spine-message-config", "--type", "merge",
                  "-p", '{"data": {"DB_POOL_SIZE": "12"}}')
    assert out == "configmap/spine-message-config patched\n"
    assert yaml.safe_load(e.cluster.stack.config_path("message").read_text())["DB_POOL_SIZE"] == "12"
    assert admin_config(e, "message")["config"]["DB_POOL_SIZE"] == "10"  # not yet: the process reads it at start
    assert kubectl(e, "rollout", "restart", "deployment/spine-message") == "deployment.apps/spine-message restarted\n"
    assert kubectl(e, "rollout", "status", "deployment/spine-message") == \
        'deployment "spine-message" successfully rolled out\n'
    assert e.pod("message") != before
    assert admin_config(e, "message")["config"]["DB_POOL_SIZE"] == "12"
    data = json.loads(kubectl(e, "get", "cm", "spine-message-config", "-o", "json"))["data"]
    assert data["DB_POOL_SIZE"] == "12" and data["RELEASE"] == "1.4.2"
    kubectl(e, "patch", "configmap", "spine-message-config", "--type", "json",
            "-p", '[{"op": "replace", "path": "/data/DB_POOL_SIZE", "value": "10"}]')
    assert "DB_POOL_SIZE: '10'" in e.cluster.stack.config_path("message").read_text()
    bad = kubectl(e, "patch", "cm", "spine-message-config", "--type", "merge", "-p", '{"data": {"X": 1}}', ok=False)
    assert "cannot unmarshal int into Go struct field ConfigMap.data of type string" in bad


def test_set_image_changes_the_release_and_an_unknown_image_never_replaces_the_pod(operator: Episode) -> None:
    e = operator
    assert kubectl(e, "set", "image", "deployment/spine-message", "message=ghcr.io/arenac/spine:1.4.3") == \
        "deployment.apps/spine-message image updated\n"
    assert admin_config(e, "message")["release"] == "1.4.3"
    assert "ghcr.io/arenac/spine:1.4.3" in kubectl(e, "get", "deploy", "spine-message", "-o", "wide")
    serving = e.pod("message")
    kubectl(e, "set", "image", "deployment/spine-message", "message=ghcr.io/arenac/spine:9.9.9")
    assert e.pod("message") == serving and admin_config(e, "message")["release"] == "1.4.3"
    # the broker serves calls concurrently: a waiting `rollout status` does not hold up a `get`
    waiting = subprocess.Popen(["kubectl", "rollout", "status", "deployment/spine-message", "--timeout=2s"],
                               env=e.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    assert e.run("kubectl", "get", "pods").returncode == 0 and time.monotonic() - started < 1.5
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 1 and out.startswith('Waiting for deployment "spine-message" rollout to finish')
    assert "timed out waiting for the condition" in err and "ImagePullBackOff" in err
    row = kubectl(e, "get", "deploy", "spine-message").splitlines()[1].split()
    assert row[:4] == ["spine-message", "1/1", "0", "1"]  # still available, not updated
    kubectl(e, "set", "image", "deployment/spine-message", "message=ghcr.io/arenac/spine:1.4.2")
    kubectl(e, "rollout", "status", "deployment/spine-message")
    assert admin_config(e, "message")["release"] == "1.4.2"
    assert 'unable to find container named "nope"' in kubectl(
        e, "set", "image", "deployment/spine-message", "nope=x:1", ok=False)


def test_set_env_reaches_the_process_environment(operator: Episode) -> None:
    e = operator
    kubectl(e, "set", "env", "deployment/spine-channel", "SPINE_READ_CONSISTENCY_HOLD_MS=120")
    view = admin_config(e, "channel")
    assert view["config"]["READ_CONSISTENCY_HOLD_MS"] == "120" and view["sources"]["READ_CONSISTENCY_HOLD_MS"] == "env"
    assert kubectl(e, "set", "env", "deployment/spine-channel", "--list") == \
        "# Deployment spine-channel, container channel\nSPINE_READ_CONSISTENCY_HOLD_MS=120\n"
    kubectl(e, "set", "env", "deployment/spine-channel", "SPINE_READ_CONSISTENCY_HOLD_MS-")
    assert admin_config(e, "channel")["sources"]["READ_CONSISTENCY_HOLD_MS"] == "file"


def test_set_env_cannot_change_the_release_an_image_carries(operator: Episode) -> None:
    e = operator  # an image-layer fault is repaired by deploying another image, not by an env var
    kubectl(e, "set", "env", "deployment/spine-message", "SPINE_RELEASE=1.5.1")
    kubectl(e, "rollout", "status", "deployment/spine-message")
    view = admin_config(e, "message")
    assert (view["release"], view["sources"]["RELEASE"]) == ("1.4.2", "image")
    kubectl(e, "set", "env", "deployment/spine-message", "SPINE_RELEASE-")
    assert admin_config(e, "message")["release"] == "1.4.2"


def test_a_bad_config_crashes_the_rollout_visibly_and_a_fix_recovers(operator: Episode) -> None:
    e = operator
    kubectl(e, "patch", "cm", "spine-auth-config", "--type", "merge", "-p", '{"data": {"DB_POOL_SIZE": "many"}}')
    kubectl(e, "rollout", "restart", "deploy/spine-auth")
    assert "CrashLoopBackOff" in kubectl(e, "rollout", "status", "deploy/spine-auth", "--timeout=1s", ok=False)
    row = next(line for line in kubectl(e, "get", "pods").splitlines() if line.startswith("spine-auth-"))
    assert row.split()[1:3] == ["0/1", "CrashLoopBackOff"]
    assert "invalid configuration" in kubectl(e, "logs", "deployment/spine-auth")
    kubectl(e, "patch", "cm", "spine-auth-config", "--type", "merge", "-p", '{"data": {"DB_POOL_SIZE": "10"}}')
    kubectl(e, "rollout", "restart", "deploy/spine-auth")
    kubectl(e, "rollout", "status", "deploy/spine-auth")
    assert http("POST", e.cluster.stack.endpoints.gateway + "/api/login", {"user": "ada"}).status == 200


def test_pods_logs_delete_and_selectors(operator: Episode) -> None:
    e = operator
    names = kubectl(e, "get", "pods", "-o", "name").split()
    assert f"pod/{e.pod('fanout')}" in names and "pod/spine-postgres-0" in names and len(names) == 8
    selected = kubectl(e, "get", "pods", "-l", "app.kubernetes.io/component=fanout", "--no-headers")
    assert selected.split()[0] == e.pod("fanout") and len(selected.splitlines()) == 1
    old = e.pod("fanout")
    # the oracle's form: delete by label
    assert kubectl(e, "delete", "pod", "-l", "app.kubernetes.io/component=fanout") == f'pod "{old}" deleted\n'
    assert e.pod("fanout") != old and e.cluster.stack.pids()["fanout"] == int(e.pod("fanout").rsplit("-", 1)[1])
    assert "NotFound" in kubectl(e, "delete", "pod", old, ok=False)
    assert "database system is ready" in kubectl(e, "logs", "spine-postgres-0")
    names = kubectl(e, "get", "pods", "-o", "name").split()
    assert kubectl(e, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}").split() == \
        [line.split("/", 1)[1] for line in names]
    described = kubectl(e, "describe", "pod", "spine-fanout")  # describe matches a name prefix
    assert f"Name:         {e.pod('fanout')}" in described and "Status:       Running" in described
    assert "the local backend runs exactly one replica" in kubectl(
        e, "scale", "deployment/spine-message", "--replicas=3", ok=False)
    assert 'the server doesn\'t have a resource type "widgets"' in kubectl(e, "get", "widgets", ok=False)


def test_exec_runs_in_the_pods_view_of_the_network(operator: Episode) -> None:
    e = operator
    config = json.loads(kubectl(e, "exec", "deployment/spine-message", "--", "curl", "-fsS",
                                "http://127.0.0.1:8080/admin/config"))
    assert config["service"] == "message"
    # the pod's own admin API is the exec's (the broker adds the credential); another service's
    # answers 401 from inside this pod, its public routes work
    other = kubectl(e, "exec", "deployment/spine-message", "--", "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                    "http://spine-channel:8080/admin/config")
    assert other.strip() == "401"
    assert json.loads(kubectl(e, "exec", "deployment/spine-message", "--", "curl", "-fsS",
                              "http://spine-channel:8080/healthz"))["service"] == "channel"
    count = kubectl(e, "exec", "statefulset/spine-postgres", "--", "psql", "-U", "spine_operator", "-d", "spine",
                    "-v", "ON_ERROR_STOP=1", "-tAc", "SELECT count(*) FROM channels")
    assert count.strip() == "5"
    assert kubectl(e, "exec", "deploy/spine-redis", "--", "redis-cli", "ping").strip() == "PONG"
    failed = e.call("kubectl", "exec", "deploy/spine-message", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (failed.code, failed.stdout, failed.stderr) == (3, "out\n", "err\ncommand terminated with exit code 3\n")
    import os

    uid = kubectl(e, "exec", "deploy/spine-message", "--", "id", "-u").strip()
    assert uid == ("65534" if os.geteuid() == 0 else str(os.geteuid()))


def test_edit_through_the_client_runs_the_editor_and_applies_a_patch(operator: Episode) -> None:
    e = operator
    unquoted = e.run("kubectl", "edit", "configmap", "spine-maintenance-config",
                     KUBE_EDITOR="sed -i s/MAINT_OFFSET_S:.*/MAINT_OFFSET_S:\\ 33/")
    assert unquoted.returncode == 1 and "cannot unmarshal int" in unquoted.stderr  # data values are strings
    done = e.run("kubectl", "edit", "configmap", "spine-maintenance-config",
                 KUBE_EDITOR="sed -i s/MAINT_OFFSET_S:.*/MAINT_OFFSET_S:\\ \\'33\\'/")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "configmap/spine-maintenance-config edited\n"
    assert "MAINT_OFFSET_S: '33'" in e.cluster.stack.config_path("maintenance").read_text()
    assert [r["reason"] for r in e.actions[-2:]] == ["get configmaps spine-maintenance-config",
                                                     "get configmaps spine-maintenance-config; "
                                                     "patch configmaps spine-maintenance-config"]
    unchanged = e.run("kubectl", "edit", "cm", "spine-maintenance-config", KUBE_EDITOR="true")
    assert unchanged.stdout == "Edit cancelled, no changes made.\n"
    kubectl(e, "patch", "cm", "spine-maintenance-config", "-p", '{"data": {"MAINT_OFFSET_S": "20"}}')


def test_other_namespaces_hold_nothing(episode: Callable[..., Episode]) -> None:
    e = episode("shell", rbac=role(rule(["", "apps"], ["*"], ["*"]), kind="ClusterRole"))
    before = e.cluster.stack.config_path("message").read_text()
    out = kubectl(e, "-n", "other", "patch", "cm", "spine-message-config", "-p", '{"data": {"DB_POOL_SIZE": "3"}}',
                  ok=False)
    assert out == 'Error from server (NotFound): configmaps "spine-message-config" not found\n'
    assert e.cluster.stack.config_path("message").read_text() == before
    assert "NotFound" in kubectl(e, "rollout", "restart", "deployment/spine-message", "-n", "other", ok=False)
    assert "NotFound" in kubectl(e, "delete", "pod", e.pod("message"), "--namespace=other", ok=False)
    assert e.call("kubectl", "get", "pods", "-n", "other").stderr == "No resources found in other namespace.\n"
    assert len(kubectl(e, "get", "pods", "-A", "--no-headers").splitlines()) == 8
