"""The harness pod's objects (arenac/runner/kube/harness_pod.py) for a real bundle (the golden
`minimal`, whose chart is rendered as the install renders it), and their creation on a fake
Kubernetes API (kmock's in-memory emulator, not a cluster: tests/helpers/fake_kube.py). Each check
has its failing side: deterministic objects (and a changed input changes them); the bundle's
ConfigMap back to the exact bytes and through the manifest check as the pod mounts it (and not as a
whole-volume mount would show it); the size limit both sides of 1 MiB; the Role's exact rules,
decided by the project's RBAC authorizer (allowed and denied); creation order; an API error
mid-way; nothing left after `uninstall`."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from arenac.broker.rbac import ApiRequest, Authorizer, service_account_user
from arenac.bundle import verify_bundle
from arenac.k8s.rbac_lint import lint_rbac
from arenac.runner.bundle import open_bundle
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube.api import KubeError
from arenac.runner.kube.install import INSTALL_ORDER, KINDS, create_objects, install_plan, uninstall
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.workloads import restart_workload
from arenac.substrate.interface import SecretKeys
from arenac.substrate.registry import driver_for
from helpers.arenac_args import parse_arenac
from helpers.fake_kube import DEPLOYMENTS, STATEFUL_SETS
from helpers.golden import complete_variant
from helpers.kube_volumes import TIMESTAMP_DIR, bundle_with, mount, project_config_map

OWNER = "0123456789abcdef"
NAMES = trial_namespaces("t1")
APP, HARNESS = NAMES.application, NAMES.harness
TOKEN = "broker-token-not-for-logs"
PASSWORD = "superuser-password-not-for-logs"
API = (hp.ApiServerEndpoint("172.18.0.2/32", 6443),)
SPINE = driver_for("spine")
HARNESS_USER = service_account_user(HARNESS, hp.NAME)
CONFIG_MAP_NAMES = tuple(f"spine-{c}-config" for c in ("auth", "channel", "fanout", "gateway", "maintenance",
                                                       "message", "redis"))


@pytest.fixture(scope="module")
def bundle():
    return open_bundle(complete_variant("minimal"))


@pytest.fixture(scope="module")
def install(bundle):
    return install_plan(bundle.directory / "chart", APP, HARNESS)


def _chart_secrets(install) -> dict[str, dict[str, str]]:
    """The chart's Secrets as the API server stores them (stringData made data)."""
    return {o.name: dict(o.body.get("stringData") or {}) for o in install.objects if o.kind == "Secret"}


@pytest.fixture(scope="module")
def credentials(install):
    values = {}
    for wanted in SPINE.cluster_credentials:
        stored = _chart_secrets(install)[wanted.secret]
        values |= {key: stored[key] for key in wanted.keys}
    values["postgres-password"] = PASSWORD
    return hp.SubstrateCredentials(SPINE.cluster_credentials, tuple(sorted(values.items())))


def _spec(bundle, install, credentials, **changes) -> hp.HarnessPodSpec:
    spec = hp.HarnessPodSpec(bundle=bundle, names=NAMES, install=install, image="ghcr.io/arenac/harness:0.1.0",
                             time_scale=0.1, credentials=credentials, api_server=API, broker_token=TOKEN,
                             agent_peers=(hp.PodsIn(APP, (("arenac.dev/role", "agent"),)),))
    return dataclasses.replace(spec, **changes)


@pytest.fixture(scope="module")
def objects(bundle, install, credentials):
    return hp.harness_pod_objects(_spec(bundle, install, credentials))


def _body(objects, kind: str, name: str | None = None) -> dict:
    (found,) = [o.body for o in objects.objects if o.kind == kind and name in (None, o.name)]
    return found


def _container(objects) -> dict:
    return _body(objects, "Pod")["spec"]["containers"][0]


# --- determinism, the objects' list ---------------------------------------------------------------

def test_the_objects_are_deterministic_and_follow_their_inputs(bundle, install, credentials, objects) -> None:
    again = hp.harness_pod_objects(_spec(bundle, install, credentials))
    assert json.dumps([o.body for o in again.objects], sort_keys=True) == json.dumps(
        [o.body for o in objects.objects], sort_keys=True)
    assert hp.spec_digest(again) == hp.spec_digest(objects)
    other = hp.harness_pod_objects(_spec(bundle, install, credentials, broker_token="another-token"))
    assert hp.spec_digest(other) != hp.spec_digest(objects)
    changed = [o.key for o, p in zip(other.objects, objects.objects, strict=True) if o.body != p.body]
    assert changed == [f"Secret {HARNESS}/{hp.TOKEN_SECRET}"]


def test_the_objects_in_creation_order_all_in_the_trials_namespaces(objects) -> None:
    assert objects.keys() == (
        f"NetworkPolicy {HARNESS}/arenac-harness-episode",
        f"ServiceAccount {HARNESS}/arenac-harness-episode",
        f"Secret {HARNESS}/arenac-broker-token",
        f"Secret {HARNESS}/arenac-substrate-credentials",
        f"ConfigMap {HARNESS}/arenac-bundle",
        f"Role {APP}/arenac-harness-episode",
        f"RoleBinding {APP}/arenac-harness-episode",
        f"Service {HARNESS}/arenac-broker",
        f"Pod {HARNESS}/arenac-harness-episode",
    )
    ranks = [INSTALL_ORDER.index(o.kind) for o in objects.objects]
    assert ranks == sorted(ranks)
    for obj in objects.objects:
        assert obj.kind in KINDS  # a kind uninstall lists and deletes
        assert obj.body["metadata"]["labels"]["arenac.dev/trial"] == "t1"
        assert obj.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "arenac"


def test_no_secret_in_a_repr_or_a_refusal(bundle, install, credentials, objects) -> None:
    spec = _spec(bundle, install, credentials)
    for shown in (repr(spec), repr(objects), repr(credentials), str(objects.objects)):
        assert TOKEN not in shown and PASSWORD not in shown
    with pytest.raises(KubeError) as refused:
        hp.harness_pod_objects(_spec(bundle, install, credentials, port=0))
    assert TOKEN not in str(refused.value) and PASSWORD not in str(refused.value)
    token_secret = _body(objects, "Secret", hp.TOKEN_SECRET)
    assert base64.b64decode(token_secret["data"]["token"]).decode() == TOKEN  # it is in the Secret, only there


@pytest.mark.parametrize(("change", "says"), [
    ({"port": 70000}, "port 70000 is not a TCP port"),
    ({"time_scale": 0.0}, "time scale 0.0 is not positive"),
    ({"broker_token": "two words"}, "one non-empty word"),
    ({"api_server": ()}, "no API server endpoint"),
    ({"names": trial_namespaces("t2")}, "not the trial's"),
    ({"deadline_s": 0}, "deadline 0 s is not positive"),
])
def test_a_spec_that_cannot_make_a_pod_is_refused(bundle, install, credentials, change, says) -> None:
    with pytest.raises(KubeError, match=says):
        hp.harness_pod_objects(_spec(bundle, install, credentials, **change))


# --- the bundle's ConfigMap, as the pod mounts it -----------------------------------------------

def _as_mounted(objects, tmp_path):
    config_map = _body(objects, "ConfigMap")
    pod = _body(objects, "Pod")
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "bundle"]
    mounts = [m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] == "bundle"]
    volume_dir = tmp_path / "kubelet" / "bundle"
    project_config_map(config_map, volume, volume_dir)
    return volume_dir, mounts


def test_the_bundle_round_trips_and_passes_its_manifest_check_as_the_pod_mounts_it(bundle, objects, tmp_path) -> None:
    volume_dir, mounts = _as_mounted(objects, tmp_path)
    assert all(m["readOnly"] and m["mountPath"] == f"/bundle/{m['subPath']}" for m in mounts)
    root = tmp_path / "container"
    mount(volume_dir, mounts, root)
    mounted = root / "bundle"
    check = verify_bundle(mounted)
    assert check.ok, check.findings()
    source = {p.relative_to(bundle.directory).as_posix(): p for p in bundle.directory.rglob("*") if p.is_file()}
    copied = {p.relative_to(mounted).as_posix(): p for p in mounted.rglob("*") if p.is_file()}
    assert copied.keys() == source.keys()
    for path, file in source.items():
        assert copied[path].read_bytes() == file.read_bytes(), path
        assert copied[path].stat().st_mode & 0o777 == file.stat().st_mode & 0o777, path
    assert copied["verifier/verify.py"].stat().st_mode & 0o777 == 0o755
    assert copied["oracle/solve.sh"].stat().st_mode & 0o777 == 0o755
    assert open_bundle(mounted).bundle_digest == bundle.bundle_digest  # what the episode does first


def test_the_volume_mounted_whole_would_fail_the_manifest_check(objects, tmp_path) -> None:
    volume_dir, _ = _as_mounted(objects, tmp_path)
    root = tmp_path / "container"
    mount(volume_dir, [{"name": "bundle", "mountPath": "/bundle", "readOnly": True}], root)
    check = verify_bundle(root / "bundle")
    assert not check.ok
    assert any(path.startswith(f"{TIMESTAMP_DIR}/") for path in check.unexpected)
    assert "chart/Chart.yaml" in check.missing  # a linked directory is not walked: why each entry is a subPath


def test_a_modes_item_only_where_it_matters(objects) -> None:
    (volume,) = [v for v in _body(objects, "Pod")["spec"]["volumes"] if v["name"] == "bundle"]
    with_mode = {item["path"]: item["mode"] for item in volume["configMap"]["items"] if "mode" in item}
    assert with_mode == {"oracle/solve.sh": 0o755, "verifier/verify.py": 0o755}
    assert volume["configMap"]["defaultMode"] == 0o644


def test_a_binary_file_is_binary_data_and_round_trips(bundle, install, credentials, tmp_path) -> None:
    binary = bytes(range(256)) * 4
    extended = bundle_with(tmp_path, bundle.directory, {"files/blob.bin": binary})
    made = hp.harness_pod_objects(_spec(extended, install, credentials))
    config_map = _body(made, "ConfigMap")
    assert set(config_map["binaryData"]) == {"files__blob.bin"}
    assert "files__blob.bin" not in config_map["data"]
    volume_dir, mounts = _as_mounted(made, tmp_path)
    mount(volume_dir, mounts, tmp_path / "container")
    assert (tmp_path / "container/bundle/files/blob.bin").read_bytes() == binary
    assert verify_bundle(tmp_path / "container/bundle").ok


def _size(bundle) -> int:
    return sum(len(p.read_bytes()) for p in bundle.directory.rglob("*") if p.is_file())


def test_a_bundle_above_a_mebibyte_is_refused_and_one_at_it_is_not(bundle, install, credentials, tmp_path) -> None:
    # the manifest grows by the new entry: measure it, then fill the rest exactly
    probe = bundle_with(tmp_path / "probe", bundle.directory, {"files/fill.txt": b""})
    room = hp.MAX_CONFIG_MAP_BYTES - _size(probe)
    at_limit = bundle_with(tmp_path / "at", bundle.directory, {"files/fill.txt": b"x" * room})
    assert _size(at_limit) == hp.MAX_CONFIG_MAP_BYTES
    hp.harness_pod_objects(_spec(at_limit, install, credentials))
    above = bundle_with(tmp_path / "above", bundle.directory, {"files/fill.txt": b"x" * (room + 1)})
    with pytest.raises(KubeError, match=r"the bundle is 1048577 bytes, above the 1048576 bytes \(1 MiB\) a ConfigMap "
                                        r"may hold.*largest: files/fill.txt"):
        hp.harness_pod_objects(_spec(above, install, credentials))


def test_a_bundle_altered_after_it_was_opened_is_refused(bundle, install, credentials, tmp_path) -> None:
    extended = bundle_with(tmp_path, bundle.directory, {"files/note.txt": b"as pinned\n"})
    (extended.directory / "files/note.txt").write_bytes(b"altered\n")
    with pytest.raises(KubeError, match=r"files/note\.txt is not what its manifest pins"):
        hp.harness_pod_objects(_spec(extended, install, credentials))


def test_a_path_that_cannot_be_a_key_is_refused(bundle, install, credentials, tmp_path) -> None:
    extended = bundle_with(tmp_path, bundle.directory, {"files/a b.txt": b"x"})
    with pytest.raises(KubeError, match=r"files/a b\.txt cannot be a ConfigMap key"):
        hp.harness_pod_objects(_spec(extended, install, credentials))


# --- the Role -----------------------------------------------------------------------------------

EXPECTED_RULES = [
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": list(CONFIG_MAP_NAMES)},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"],
     "resourceNames": ["spine-maintenance"]},
]


def test_the_roles_rules_are_exactly_the_justified_ones(objects) -> None:
    role = _body(objects, "Role")
    assert role["metadata"]["namespace"] == APP
    assert role["rules"] == EXPECTED_RULES
    assert all(rule.why for rule in objects.rules)
    assert lint_rbac([role, _body(objects, "RoleBinding")]) == []  # the project's least-privilege lint
    binding = _body(objects, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": hp.NAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": hp.NAME, "namespace": HARNESS}]
    assert not any(o.kind.startswith("Cluster") for o in objects.objects)


def _authorizer(objects) -> Authorizer:
    return Authorizer([o.body for o in objects.objects], HARNESS_USER)


@pytest.mark.parametrize("request_", [
    ApiRequest("patch", "apps", "deployments", name="spine-maintenance", namespace=APP),  # the restart challenge
    ApiRequest("get", "apps", "deployments", name="spine-maintenance", namespace=APP),  # and its rollout
    ApiRequest("get", "", "configmaps", name="spine-redis-config", namespace=APP),
    ApiRequest("list", "", "pods", namespace=APP),
])
def test_the_role_allows_what_the_episode_does(objects, request_) -> None:
    assert _authorizer(objects).allows(request_)


@pytest.mark.parametrize("request_", [
    ApiRequest("get", "", "secrets", name="spine-credentials", namespace=APP),
    ApiRequest("list", "", "secrets", namespace=APP),
    ApiRequest("delete", "", "pods", name="spine-gateway-0", namespace=APP),
    ApiRequest("get", "", "pods", subresource="log", name="spine-gateway-0", namespace=APP),
    ApiRequest("create", "", "pods", subresource="exec", name="spine-postgres-0", namespace=APP),
    ApiRequest("patch", "rbac.authorization.k8s.io", "roles", name=hp.NAME, namespace=APP),
    ApiRequest("patch", "rbac.authorization.k8s.io", "rolebindings", name=hp.NAME, namespace=APP),
    ApiRequest("patch", "apps", "deployments", name="spine-gateway", namespace=APP),  # not a restart target
    ApiRequest("patch", "apps", "statefulsets", name="spine-postgres", namespace=APP),
    ApiRequest("get", "apps", "deployments", name="spine-gateway", namespace=APP),  # never read: the pods say
    ApiRequest("get", "apps", "statefulsets", name="spine-postgres", namespace=APP),
    ApiRequest("delete", "apps", "deployments", name="spine-maintenance", namespace=APP),
    ApiRequest("patch", "apps", "deployments", name="spine-maintenance", subresource="scale", namespace=APP),
    ApiRequest("list", "apps", "deployments", namespace=APP),
    ApiRequest("patch", "", "configmaps", name="spine-redis-config", namespace=APP),
    ApiRequest("get", "", "configmaps", name="spine-postgres-config", namespace=APP),  # not recorded
    ApiRequest("list", "", "configmaps", namespace=APP),
    ApiRequest("watch", "", "pods", namespace=APP),
    ApiRequest("list", "", "pods", namespace=HARNESS),  # another namespace
    ApiRequest("get", "", "configmaps", name="arenac-plan", namespace=HARNESS),
    ApiRequest("patch", "apps", "deployments", name="spine-maintenance", namespace="kube-system"),
    ApiRequest("list", "", "nodes", namespace=""),
])
def test_the_role_denies_everything_else(objects, request_) -> None:
    assert not _authorizer(objects).allows(request_)


def test_the_agent_is_not_granted_by_the_harness_role(objects) -> None:
    agent = Authorizer([o.body for o in objects.objects], service_account_user(APP, "arenac-agent"))
    assert not agent.allows(ApiRequest("patch", "apps", "deployments", name="spine-maintenance", namespace=APP))


def test_a_statefulset_restart_target_is_patched_as_one_and_none_without_a_restart(bundle, install,
                                                                                  credentials) -> None:
    plan = bundle.plan
    postgres = dataclasses.replace(bundle, plan=plan.model_copy(update={
        "challenges": plan.challenges.model_copy(update={"restart": ("postgres", "gateway")})}))
    rules = _body(hp.harness_pod_objects(_spec(postgres, install, credentials)), "Role")["rules"]
    patches = {(r["resources"][0], tuple(r["resourceNames"])) for r in rules if r["verbs"] == ["get", "patch"]}
    assert patches == {("deployments", ("spine-gateway",)), ("statefulsets", ("spine-postgres",))}
    none = dataclasses.replace(bundle, plan=plan.model_copy(update={
        "challenges": plan.challenges.model_copy(update={"restart": ()})}))
    rules = _body(hp.harness_pod_objects(_spec(none, install, credentials)), "Role")["rules"]
    assert [r for r in rules if "patch" in r["verbs"]] == []


def test_a_restart_target_or_configmap_the_chart_lacks_is_refused(bundle, install, credentials) -> None:
    plan = bundle.plan
    ghost = dataclasses.replace(bundle, plan=plan.model_copy(update={
        "challenges": plan.challenges.model_copy(update={"restart": ("ghost",)})}))
    with pytest.raises(KubeError, match=r"no a Deployment or StatefulSet spine-ghost"):
        hp.harness_pod_objects(_spec(ghost, install, credentials))
    without = dataclasses.replace(install, objects=tuple(o for o in install.objects if o.name != "spine-redis-config"))
    with pytest.raises(KubeError, match="has no spine-redis-config"):
        hp.harness_pod_objects(_spec(bundle, without, credentials))


# --- the Pod, its Service and NetworkPolicy -------------------------------------------------------

def test_the_pod_runs_the_episode_as_an_unprivileged_user_on_a_read_only_root(bundle, install, credentials,
                                                                            objects) -> None:
    pod = _body(objects, "Pod")["spec"]
    container = _container(objects)
    assert container["args"] == ["harness", "episode", "/bundle", "--listen", "0.0.0.0:7400", "--token-file",
                                 "/etc/arenac/broker/token", "--run-dir", "/var/arenac/episode", "--time-scale", "0.1",
                                 "--target-namespace", APP, "--credentials", "/etc/arenac/credentials"]
    assert parse_arenac(container["args"]) == "arenac harness episode"  # a command the image has
    healthy = _container(hp.harness_pod_objects(_spec(bundle, install, credentials, healthy=True)))
    assert healthy["args"] == [*container["args"], "--healthy"]  # the healthy control: the episode injects none
    assert parse_arenac(healthy["args"]) == "arenac harness episode"
    probe = container["readinessProbe"]["exec"]["command"]
    assert probe[0] == "arenac" and parse_arenac(probe[1:]) == "arenac harness status"
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 10002
    assert container["securityContext"] == {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert pod["serviceAccountName"] == hp.NAME and pod["automountServiceAccountToken"] is True
    assert pod["restartPolicy"] == "Never"
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/var/arenac", "/tmp"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert {name for name, v in volumes.items() if "emptyDir" in v} == {"state", "tmp"}
    assert volumes["broker-token"]["secret"] == {"secretName": hp.TOKEN_SECRET, "defaultMode": 0o440}
    assert volumes["credentials"]["secret"] == {"secretName": hp.CREDENTIALS_SECRET, "defaultMode": 0o440}
    assert {"name": "ARENAC_CREDENTIALS", "value": "/etc/arenac/credentials"} in container["env"]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "192Mi"},
                                      "limits": {"cpu": "2", "memory": "1Gi"}}
    account = _body(objects, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False  # only the pod asks for a token
    assert "activeDeadlineSeconds" not in pod


def test_the_credentials_are_the_keys_cluster_endpoints_reads(install, credentials, objects) -> None:
    copied = {k: base64.b64decode(v).decode() for k, v in
              _body(objects, "Secret", hp.CREDENTIALS_SECRET)["data"].items()}
    assert set(copied) == {key for wanted in SPINE.cluster_credentials for key in wanted.keys}
    endpoints = SPINE.cluster_endpoints(APP, copied)  # enough: cluster_endpoints builds from exactly these
    assert endpoints.gateway == f"http://spine-gateway.{APP}.svc:8080"
    for key in copied:
        with pytest.raises(ValueError, match=key.split(".")[0]):
            SPINE.cluster_endpoints(APP, {k: v for k, v in copied.items() if k != key})
    chart = _chart_secrets(install)  # the chart's secret.yaml holds each, under the driver's Secret names
    for wanted in SPINE.cluster_credentials:
        assert set(wanted.keys) <= set(chart[wanted.secret]), wanted


def test_the_service_and_network_policy_open_only_the_broker(bundle, install, credentials, objects) -> None:
    service = _body(objects, "Service")["spec"]
    assert service["ports"] == [{"name": "broker", "port": 7400, "targetPort": "broker", "protocol": "TCP"}]
    assert service["selector"] == {"app.kubernetes.io/name": hp.NAME, "arenac.dev/trial": "t1"}
    assert service["selector"].items() <= _body(objects, "Pod")["metadata"]["labels"].items()
    policy = _body(objects, "NetworkPolicy")["spec"]
    assert policy["podSelector"] == {"matchLabels": service["selector"]}
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": APP}},
                                            "podSelector": {"matchLabels": {"arenac.dev/role": "agent"}}}],
                                  "ports": [{"protocol": "TCP", "port": 7400}]}]
    assert policy["egress"] == [
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": APP}}}]},
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                 "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"to": [{"ipBlock": {"cidr": "172.18.0.2/32"}}], "ports": [{"protocol": "TCP", "port": 6443}]},
    ]
    alone = hp.harness_pod_objects(_spec(bundle, install, credentials, agent_peers=(), port=7500))
    assert _body(alone, "NetworkPolicy")["spec"]["ingress"] == []  # no peer: nothing but a port-forward
    outside = hp.harness_pod_objects(_spec(bundle, install, credentials, agent_peers=(hp.IpBlock("10.9.0.0/16"),)))
    assert _body(outside, "NetworkPolicy")["spec"]["ingress"][0]["from"] == [{"ipBlock": {"cidr": "10.9.0.0/16"}}]


# --- on the fake API --------------------------------------------------------------------------------

def _store_chart_secrets(fake, install) -> None:
    from helpers.fake_kube import kmock

    for name, values in _chart_secrets(install).items():
        fake.put(kmock.resource("", "v1", "secrets"), APP, name, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": APP},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}})


def test_the_credentials_are_read_by_name_and_key(fake, api, install) -> None:
    create_trial_namespaces(api, "t1", OWNER)
    _store_chart_secrets(fake, install)
    read = hp.read_substrate_credentials(api, APP, SPINE.cluster_credentials)
    assert {k for k, _ in read.values} == {k for w in SPINE.cluster_credentials for k in w.keys}
    assert dict(read.values)["token"] == _chart_secrets(install)["spine-admin-credential"]["token"]
    gets = [r.path for r in fake.requests() if r.method == "GET" and "/secrets" in r.path]
    assert gets == [f"/api/v1/namespaces/{APP}/secrets/spine-credentials",
                    f"/api/v1/namespaces/{APP}/secrets/spine-admin-credential"]
    with pytest.raises(KubeError, match=f"Secret {APP}/spine-credentials lacks pgpass-not-there"):
        hp.read_substrate_credentials(api, APP, (SecretKeys("spine-credentials", ("pgpass-not-there",)),))
    with pytest.raises(KubeError, match=f"cannot read Secret {APP}/absent for the harness: not there"):
        hp.read_substrate_credentials(api, APP, (SecretKeys("absent", ("x",)),))
    with pytest.raises(KubeError, match="the key token is in Secrets spine-admin-credential and spine-admin"):
        hp.read_substrate_credentials(api, APP, (SecretKeys("spine-admin-credential", ("token",)),
                                                 SecretKeys("spine-admin-credential", ("token",))))


def test_the_objects_are_created_in_order_and_uninstall_leaves_nothing(fake, api, objects) -> None:
    create_trial_namespaces(api, "t1", OWNER)
    created = hp.create_harness_pod(api, objects, timeout_s=20)
    assert created == objects.keys()
    posts = [r for r in fake.requests() if r.method == "POST" and r.path != "/api/v1/namespaces"]
    assert [f"{r.body['kind']} {r.body['metadata']['namespace']}/{r.body['metadata']['name']}" for r in posts] == list(
        objects.keys())
    assert posts[-1].body["kind"] == "Pod"
    for request in fake.requests():
        assert "/namespaces/" not in request.path or f"/namespaces/{APP}" in request.path or (
            f"/namespaces/{HARNESS}" in request.path), request.path
    assert fake.everything() != []
    uninstalled = uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert set(created) <= set(uninstalled.deleted)
    assert fake.everything() == []


def test_an_api_error_mid_way_names_the_object_and_what_was_created(fake, api, objects) -> None:
    create_trial_namespaces(api, "t1", OWNER)
    fake.fail_create(4)
    with pytest.raises(hp.HarnessPodFailed, match=rf"cannot create Secret {HARNESS}/arenac-substrate-credentials: "
                                                  r"HTTP 500 .*\(after creating 3 objects\)") as failed:
        hp.create_harness_pod(api, objects, timeout_s=20)
    assert failed.value.created == objects.keys()[:3]
    assert TOKEN not in str(failed.value) and PASSWORD not in str(failed.value)
    uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert fake.everything() == []


def test_an_object_already_there_is_a_conflict(fake, api, objects) -> None:
    create_trial_namespaces(api, "t1", OWNER)
    create_objects(api, [o for o in objects.objects if o.kind == "ServiceAccount"], 10, "a test")
    with pytest.raises(hp.HarnessPodFailed, match=f"cannot create ServiceAccount {HARNESS}/{hp.NAME}: HTTP 409"):
        hp.create_harness_pod(api, objects, timeout_s=20)
    uninstall(api, APP, HARNESS, timeout_s=10, poll_s=0.05)
    assert fake.everything() == []


def _workload(kind: str, name: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": APP, "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                       "availableReplicas": 1}}


def test_a_restart_told_its_kind_patches_only_that_kind(fake, api) -> None:
    create_trial_namespaces(api, "t1", OWNER)
    fake.put(STATEFUL_SETS, APP, "spine-postgres", _workload("StatefulSet", "spine-postgres"))
    fake.put(DEPLOYMENTS, APP, "spine-gateway", _workload("Deployment", "spine-gateway"))
    with fake.controller(delay_s=0.02):
        restarted = restart_workload(api, APP, "spine-postgres", timeout_s=10, poll_s=0.02, kind="StatefulSet")
    assert restarted.kind == "StatefulSet"
    patches = [r.path for r in fake.requests() if r.method == "PATCH"]
    assert patches == [f"/apis/apps/v1/namespaces/{APP}/statefulsets/spine-postgres"]  # no Deployment probe first
    with pytest.raises(KubeError, match=r"cannot restart .*/spine-gateway: no StatefulSet of that name"):
        restart_workload(api, APP, "spine-gateway", timeout_s=2, poll_s=0.02, kind="StatefulSet")


def test_the_api_servers_endpoints_are_read_from_the_kubernetes_service(fake, api) -> None:
    from helpers.fake_kube import kmock

    endpoints = kmock.resource("", "v1", "endpoints")
    with pytest.raises(KubeError, match="cannot read the API server's endpoints"):
        hp.api_server_endpoints(api)
    fake.put(endpoints, "default", "kubernetes", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "kubernetes", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "172.18.0.2"}], "ports": [{"name": "https", "port": 6443,
                                                                     "protocol": "TCP"}]}]})
    assert hp.api_server_endpoints(api) == (hp.ApiServerEndpoint("172.18.0.2/32", 6443),)
