"""The agent's access on a fake Kubernetes API (kmock's in-memory emulator, not a cluster:
tests/helpers/fake_kube.py): the bundle's RBAC applied into the install's namespace without
touching the bundle, the TokenRequest the runner sends, the kubeconfig it writes (exact text, mode
0600), and the revocation at the freeze (exactly the agent's RoleBinding(s) and ServiceAccount)."""

from __future__ import annotations

import base64
import hashlib
import stat

import pytest
import yaml

from arenac.runner.kube.agent_access import (
    AgentToken,
    apply_agent_rbac,
    kubeconfig_text,
    rbac_objects,
    request_agent_token,
    revoke_agent_access,
    token_seconds,
    write_agent_kubeconfig,
)
from arenac.runner.kube.api import KubeError
from helpers import ROOT
from helpers.fake_kube import FAKE_TOKEN, ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS

# a golden bundle's rbac/ (ServiceAccount, Role, RoleBinding, all in the constant namespace `arenac`)
RBAC = ROOT / "tests/golden/compound/expected/locks-and-slow-reads/locks-and-slow-reads-8cff9690/rbac"
APP = "arenac-t1-app"


def _documents() -> list[bytes]:
    return [path.read_bytes() for path in sorted(RBAC.glob("*.yaml"))]


def test_the_rbac_objects_take_the_installs_namespace_and_the_bundle_is_untouched() -> None:
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in RBAC.glob("*.yaml")}
    objects = rbac_objects(_documents(), APP)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "arenac-agent"), ("Role", "arenac-agent"), ("RoleBinding", "arenac-agent")]
    assert {o["metadata"]["namespace"] for o in objects} == {APP}
    assert objects[2]["subjects"] == [{"kind": "ServiceAccount", "name": "arenac-agent", "namespace": APP}]
    assert objects[1]["rules"] == yaml.safe_load((RBAC / "role.yaml").read_text())["rules"]
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in RBAC.glob("*.yaml")} == before
    assert not any(b"namespace" in document for document in _documents())  # the compiler leaves it to the install


def test_an_older_bundles_objects_in_arenac_move_to_the_installs_namespace() -> None:
    older = []  # as the compiler wrote them before rbac/ left the namespace to the install
    for document in _documents():
        obj = yaml.safe_load(document)
        obj["metadata"]["namespace"] = "arenac"
        for subject in obj.get("subjects") or []:
            subject["namespace"] = "arenac"
        older.append(yaml.safe_dump(obj).encode())
    objects = rbac_objects(older, APP)
    assert {o["metadata"]["namespace"] for o in objects} == {APP}
    assert objects[2]["subjects"] == [{"kind": "ServiceAccount", "name": "arenac-agent", "namespace": APP}]


@pytest.mark.parametrize(("extra", "says"), [
    (b"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\n", "holds a ClusterRole"),
    (b"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: second}\n", "exactly one ServiceAccount"),
])
def test_rbac_beyond_the_agents_namespace_is_refused(extra: bytes, says: str) -> None:
    with pytest.raises(KubeError, match=says):
        rbac_objects([*_documents(), extra], APP)


def test_apply_creates_them_in_the_namespace_keeping_the_charts_service_account(fake, api) -> None:
    fake.put(SERVICE_ACCOUNTS, APP, "arenac-agent", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                     "metadata": {"name": "arenac-agent", "namespace": APP}})
    applied = apply_agent_rbac(api, _documents(), APP)
    assert applied.service_account == "arenac-agent"
    assert applied.created == ("Role/arenac-agent", "RoleBinding/arenac-agent")
    assert applied.kept == ("ServiceAccount/arenac-agent",)
    assert fake.get(ROLE_BINDINGS, APP, "arenac-agent")["subjects"][0]["namespace"] == APP
    assert fake.names(ROLES) == ["arenac-agent"]
    writes = [(r.method, r.path) for r in fake.requests() if r.method != "GET"]
    assert writes == [("POST", f"/api/v1/namespaces/{APP}/serviceaccounts"),
                      ("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{APP}/roles"),
                      ("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{APP}/rolebindings")]


def test_a_conflict_on_a_role_is_an_error(fake, api) -> None:
    apply_agent_rbac(api, _documents(), APP)
    with pytest.raises(KubeError, match=f"cannot create Role/arenac-agent in {APP}: HTTP 409"):
        apply_agent_rbac(api, _documents(), APP)


@pytest.mark.parametrize(("window", "scale", "margin", "seconds"), [
    (600.0, 1.0, 300.0, 900), (600.0, 0.1, 300.0, 600), (3600.0, 1.0, 300.0, 3900), (1000.0, 0.25, 0.5, 600),
    (2000.0, 0.5, 0.5, 1001)])
def test_the_tokens_lifetime(window: float, scale: float, margin: float, seconds: int) -> None:
    assert token_seconds(window, scale, margin) == seconds


def test_the_token_request_asks_for_the_lifetime_of_that_account_in_that_namespace(fake, api) -> None:
    apply_agent_rbac(api, _documents(), APP)
    token = request_agent_token(api, APP, "arenac-agent", 900)
    assert (token.namespace, token.service_account, token.expiration_seconds, token.token) == (
        APP, "arenac-agent", 900, FAKE_TOKEN)
    assert token.expires_at == "2030-01-01T00:15:00+00:00"
    assert FAKE_TOKEN not in repr(token)
    [asked] = [r for r in fake.requests() if r.path.endswith("/token")]
    assert (asked.method, asked.path) == ("POST", f"/api/v1/namespaces/{APP}/serviceaccounts/arenac-agent/token")
    assert asked.body == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                          "spec": {"expirationSeconds": 900}}  # no audiences: the API server's default


def test_a_token_shorter_than_the_api_allows_is_not_asked_for(api) -> None:
    with pytest.raises(KubeError, match="at least 600 s"):
        request_agent_token(api, APP, "arenac-agent", 599)


EXPECTED_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: arenac-t1-app
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: {ca}
users:
- name: arenac-t1-app
  user:
    token: {token}
contexts:
- name: arenac-t1-app
  context:
    cluster: arenac-t1-app
    user: arenac-t1-app
    namespace: arenac-t1-app
current-context: arenac-t1-app
preferences: {{}}
"""
CA = b"-----BEGIN CERTIFICATE-----\nMIIfake\n-----END CERTIFICATE-----\n"


def test_the_kubeconfig_is_exactly_one_cluster_user_and_context_written_0600(api, tmp_path) -> None:
    (tmp_path / "ca.crt").write_bytes(CA)
    api.configuration.host = "https://10.0.0.1:6443"
    api.configuration.ssl_ca_cert = str(tmp_path / "ca.crt")
    token = AgentToken(APP, "arenac-agent", 900, "2030-01-01T00:15:00+00:00", "the-token")
    path = write_agent_kubeconfig(api, token, tmp_path / "agent.kubeconfig")
    expected = EXPECTED_KUBECONFIG.format(ca=base64.b64encode(CA).decode(), token="the-token")
    assert path.read_text() == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] in (["ca.crt", "agent.kubeconfig"], ["agent.kubeconfig", "ca.crt"])
    parsed = yaml.safe_load(expected)
    assert "client-certificate-data" not in expected and "client-key-data" not in expected
    assert (len(parsed["clusters"]), len(parsed["users"]), len(parsed["contexts"])) == (1, 1, 1)


def test_a_plain_http_server_has_no_ca_and_an_unverified_connection_is_refused(api, tmp_path) -> None:
    assert "certificate-authority-data" not in kubeconfig_text("http://127.0.0.1:1", None, "t", APP)
    api.configuration.verify_ssl = False
    with pytest.raises(KubeError, match="skips TLS verification"):
        write_agent_kubeconfig(api, AgentToken(APP, "arenac-agent", 900, "", "t"), tmp_path / "k")
    assert not (tmp_path / "k").exists()


def test_revocation_deletes_exactly_the_agents_bindings_and_account(fake, api) -> None:
    apply_agent_rbac(api, _documents(), APP)
    other = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "arenac-agent"}}
    fake.put(ROLE_BINDINGS, APP, "second", {**other, "metadata": {"name": "second", "namespace": APP},
                                            "subjects": [{"kind": "ServiceAccount", "name": "arenac-agent"}]})
    fake.put(ROLE_BINDINGS, APP, "someone-else", {**other, "metadata": {"name": "someone-else", "namespace": APP},
                                                  "subjects": [{"kind": "ServiceAccount", "name": "reader",
                                                                "namespace": APP}]})
    fake.put(ROLE_BINDINGS, APP, "elsewhere", {**other, "metadata": {"name": "elsewhere", "namespace": APP},
                                               "subjects": [{"kind": "ServiceAccount", "name": "arenac-agent",
                                                             "namespace": "another"}]})
    request_agent_token(api, APP, "arenac-agent", 900)
    before = len(fake.requests())
    revocation = revoke_agent_access(api, APP, "arenac-agent")
    assert revocation.role_bindings == ("arenac-agent", "second")
    assert revocation.service_account_deleted
    deletes = [r.path for r in fake.requests()[before:] if r.method == "DELETE"]
    assert deletes == [f"/apis/rbac.authorization.k8s.io/v1/namespaces/{APP}/rolebindings/arenac-agent",
                       f"/apis/rbac.authorization.k8s.io/v1/namespaces/{APP}/rolebindings/second",
                       f"/api/v1/namespaces/{APP}/serviceaccounts/arenac-agent"]
    assert fake.names(ROLE_BINDINGS, APP) == ["elsewhere", "someone-else"]
    assert fake.names(ROLES, APP) == ["arenac-agent"]
    assert fake.names(SERVICE_ACCOUNTS, APP) == []
    with pytest.raises(KubeError, match="HTTP 404"):  # no account, no new token
        request_agent_token(api, APP, "arenac-agent", 900)
    again = revoke_agent_access(api, APP, "arenac-agent")
    assert (again.role_bindings, again.service_account_deleted) == ((), False)
