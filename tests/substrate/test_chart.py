"""The spine Helm chart: renders with real Helm (helm-python-sdk), every object is valid for Kubernetes
1.30 and for the newest version kubernetes-validate ships (strict), names and labels are the fixed
ones the compiler's RBAC relies on, and every value in values.yaml reaches the output."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from helm_python import Chart
from kubernetes_validate.utils import latest_version

from arenac.substrate.spine.redis_local import AGENT_COMMANDS, FANOUT_COMMANDS, SERVICE_COMMANDS
from arenac.substrate.spine.seed import substrate_file
from arenac.substrate.spine.spec import SpineSpec
from spine_services.keys import SERVICES

CHART = Path(str(substrate_file("chart")))
VERSIONS = ("1.30", latest_version())


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with Chart.load(CHART) as chart:
        manifests = chart.render(values=values or {}, name="trial", namespace="arena-1")
    return [doc for text in sorted(manifests.values()) for doc in yaml.safe_load_all(text) if doc]


def by_name(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}


def test_chart_metadata() -> None:
    with Chart.load(CHART) as chart:
        assert (chart.name, chart.version) == ("spine", "0.1.0")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("overlay", [
    {},
    {"services": {"message": {"release": "1.5.1", "config": {"DB_POOL_SIZE": "4", "SEQUENCER_MODE": "rmw"}}},
     "redis": {"maxmemory": "2mb"}, "postgres": {"settings": {"idle_in_transaction_session_timeout": "5s"}},
     "timeScale": "0.1", "credentials": {"seed": "s3cret"}},
])
def test_every_object_validates_strictly(version: str, overlay: dict[str, Any]) -> None:
    objects = render(overlay)
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_fixed_object_names_and_labels() -> None:
    objects = by_name(render())
    expected = {("Secret", "spine-credentials"), ("Secret", "spine-admin-credential")}
    for name in SERVICES:
        expected |= {("Deployment", f"spine-{name}"), ("ConfigMap", f"spine-{name}-config"),
                     ("Service", f"spine-{name}")}
    expected |= {("StatefulSet", "spine-postgres"), ("Service", "spine-postgres"),
                 ("ConfigMap", "spine-postgres-config"),
                 ("Deployment", "spine-redis"), ("Service", "spine-redis"), ("ConfigMap", "spine-redis-config")}
    assert set(objects) == expected
    for (kind, name), obj in objects.items():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "spine", name
        if kind in ("Deployment", "StatefulSet"):
            component = name.removeprefix("spine-")
            assert labels["app.kubernetes.io/component"] == component
            pod = obj["spec"]["template"]["spec"]
            assert [c["name"] for c in pod["containers"]] == [component]
            container = pod["containers"][0]
            assert {"readinessProbe", "livenessProbe", "resources"} <= set(container)
            assert container["resources"]["requests"]


def test_services_follow_the_values() -> None:
    overlay = {"services": {"message": {"release": "1.5.0", "replicas": 2, "config": {"DB_POOL_SIZE": "4"}}},
               "timeScale": "0.5", "image": {"repository": "registry.local/spine", "pullPolicy": "Always"}}
    objects = by_name(render(overlay))
    spec = SpineSpec.from_values(overlay)
    for name in SERVICES:
        data = objects[("ConfigMap", f"spine-{name}-config")]["data"]
        assert data == spec.service_file(name)  # the same data the local stack writes to its config file
        deployment = objects[("Deployment", f"spine-{name}")]
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == f"registry.local/spine:{spec.services[name].release}"
        assert container["imagePullPolicy"] == "Always"
        assert container["args"][0] == name
    message = objects[("Deployment", "spine-message")]
    assert message["spec"]["replicas"] == 2
    assert objects[("ConfigMap", "spine-message-config")]["data"]["RELEASE"] == "1.5.0"


def test_postgres_and_redis_follow_the_values() -> None:
    overlay = {"postgres": {"image": "postgres:17", "settings": {"idle_in_transaction_session_timeout": "5s"}},
               "redis": {"image": "redis:7.2", "maxmemory": "2mb", "maxmemoryPolicy": "allkeys-lru"}}
    objects = by_name(render(overlay))
    pg = objects[("StatefulSet", "spine-postgres")]["spec"]["template"]["spec"]["containers"][0]
    assert pg["image"] == "postgres:17"
    assert "idle_in_transaction_session_timeout=5s" in pg["args"]
    init = objects[("ConfigMap", "spine-postgres-config")]["data"]
    assert "CREATE TABLE messages" in init["30-schema.sql"] and "INSERT INTO messages" in init["40-seed.sql"]
    assert objects[("ConfigMap", "spine-redis-config")]["data"] == {
        "maxmemory": "2mb", "maxmemoryPolicy": "allkeys-lru", "appendonly": "no", "appendfsync": "everysec"}
    redis = objects[("Deployment", "spine-redis")]["spec"]["template"]["spec"]["containers"][0]
    assert redis["image"] == "redis:7.2"
    for key in ("maxmemory", "maxmemoryPolicy", "appendonly", "appendfsync"):  # read from the mounted ConfigMap
        assert f"$(cat /etc/redis-config/{key})" in redis["args"][0]
    assert ("Deployment", "spine-redis") in objects and ("PersistentVolumeClaim", "spine-redis-data") not in objects
    acl = objects[("Secret", "spine-credentials")]["stringData"]["users.acl"]
    assert f"~spine:* -@all {FANOUT_COMMANDS}" in acl  # the same rights as the local Redis
    assert "user agent on >" in acl and f" ~* &* {AGENT_COMMANDS}\n" in acl
    assert f" ~* &* {SERVICE_COMMANDS}\n" in acl.split("user default", 1)[1].split("\n", 1)[0] + "\n"
    assert "--enable-module-command no" in redis["args"][0] and "--enable-debug-command no" in redis["args"][0]
    pod = objects[("Deployment", "spine-redis")]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_admin_credential_is_a_secret_mounted_as_a_file() -> None:
    objects = by_name(render())
    token = objects[("Secret", "spine-admin-credential")]["stringData"]["token"]
    assert len(token) == 32
    for service in ("gateway", "message", "fanout"):
        pod = objects[("Deployment", f"spine-{service}")]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        env = {e["name"]: e for e in container["env"]}
        assert env["SPINE_ADMIN_TOKEN_FILE"]["value"] == "/etc/spine-admin/token"
        assert token not in json.dumps(container)
        volume = next(v for v in pod["volumes"] if v["name"] == "admin")
        assert volume["secret"]["secretName"] == "spine-admin-credential"
    pg = objects[("StatefulSet", "spine-postgres")]["spec"]["template"]["spec"]["containers"][0]
    assert "superuser_reserved_connections=10" in pg["args"]


def test_postgres_image_is_the_major_version_the_local_stack_runs() -> None:
    import subprocess

    from arenac.substrate.spine.postgres import POSTGRES_BIN_PATH

    version = subprocess.run([str(POSTGRES_BIN_PATH / "postgres"), "--version"], capture_output=True, text=True,
                             timeout=10).stdout  # "postgres (PostgreSQL) 18.6"
    major = version.split()[-1].split(".")[0]
    statefulset = by_name(render())[("StatefulSet", "spine-postgres")]
    pg = statefulset["spec"]["template"]["spec"]["containers"][0]
    assert pg["image"] == f"postgres:{major}"
    # from 18 the image refuses a volume at /var/lib/postgresql/data: the data lives one level up
    assert {"name": "data", "mountPath": "/var/lib/postgresql"} in pg["volumeMounts"]
    assert "PGDATA" not in {e["name"] for e in pg["env"]}


def test_values_yaml_is_the_healthy_spec() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values == SpineSpec().to_values()


def _leaves(tree: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key)


def _perturbed(values: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    changed = copy.deepcopy(values)
    node = changed
    for key in path[:-1]:
        node = node[key]
    old = node[path[-1]]
    node[path[-1]] = old + 1 if isinstance(old, int) else f"{old}9"
    return changed


def test_every_value_is_used() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    baseline = render(values)
    unused = [".".join(path) for path in _leaves(values) if render(_perturbed(values, path)) == baseline]
    assert not unused, f"values that change nothing in the rendered chart: {unused}"


def test_rendering_is_deterministic() -> None:
    assert render() == render()


def test_redis_persists_and_takes_acl_rules_from_the_values() -> None:
    """appendonly "yes" puts the append-only file on a claim a new pod finds; `acl` rules land in the
    ConfigMap as acl-USER, which the container appends to that user's line at start."""
    objects = by_name(render({"redis": {"appendonly": "yes", "acl": {"fanout": "-@list"}}}))
    data = objects[("ConfigMap", "spine-redis-config")]["data"]
    assert data["appendonly"] == "yes" and data["acl-fanout"] == "-@list"
    deployment = objects[("Deployment", "spine-redis")]["spec"]
    volumes = {v["name"]: v for v in deployment["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "spine-redis-data"
    assert ("PersistentVolumeClaim", "spine-redis-data") in objects and deployment["strategy"]["type"] == "Recreate"
    args = deployment["template"]["spec"]["containers"][0]["args"][0]
    assert '"/etc/redis-config/acl-" $2' in args and "--aclfile /run/redis-acl/users.acl" in args
    healthy = by_name(render())
    assert healthy[("Deployment", "spine-redis")]["spec"]["template"]["metadata"]["annotations"] != \
        deployment["template"]["metadata"]["annotations"]  # a changed ConfigMap rolls the pod
