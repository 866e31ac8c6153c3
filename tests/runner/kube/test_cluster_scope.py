"""Nothing cluster-scoped but the trial's two namespaces, by construction: a whole trial's cluster
machinery (namespaces, the agent's RBAC, token and kubeconfig, revocation, teardown, cleanup) run
against a fake Kubernetes API (kmock's in-memory emulator, not a cluster:
tests/helpers/fake_kube.py), every request it served recorded and checked."""

from __future__ import annotations

import re

from arenac.runner.kube.agent_access import (
    apply_agent_rbac,
    request_agent_token,
    revoke_agent_access,
    write_agent_kubeconfig,
)
from arenac.runner.kube.namespaces import create_trial_namespaces, delete_namespaces
from arenac.runner.kube.records import cleanup
from helpers import ROOT

RBAC = ROOT / "tests/golden/compound/expected/locks-and-slow-reads/locks-and-slow-reads-8cff9690/rbac"
NAMESPACED = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)/namespaces/(?P<namespace>[^/]+)/[^/]+(/.*)?$")
OWN_NAMESPACE = re.compile(r"^/api/v1/namespaces(/(?P<namespace>[^/]+))?$")


def test_a_trial_touches_only_its_namespaces_and_what_is_in_them(fake, api, records, tmp_path) -> None:
    names = create_trial_namespaces(api, "t1", records.owner())
    records.register("t1", fake.url, None, (names.application, names.harness))
    applied = apply_agent_rbac(api, [p.read_bytes() for p in sorted(RBAC.glob("*.yaml"))], names.application)
    token = request_agent_token(api, names.application, applied.service_account, 900)
    write_agent_kubeconfig(api, token, tmp_path / "agent.kubeconfig")
    revoke_agent_access(api, names.application, applied.service_account)
    delete_namespaces(api, [names.application, names.harness], timeout_s=5, poll_s=0.05)
    records.unregister("t1")
    cleanup(api, records, timeout_s=5, poll_s=0.05)

    served = fake.requests()
    assert served
    touched = set()
    for request in served:
        inside = NAMESPACED.match(request.path)
        own = OWN_NAMESPACE.match(request.path)
        assert inside or own, f"{request.method} {request.path}: cluster-scoped and not a namespace"
        namespace = (inside or own).group("namespace")  # type: ignore[union-attr]
        if namespace is not None:
            touched.add(namespace)
        if own and own.group("namespace") is None:  # the collection: create one, or list arenac's
            assert request.method == "POST" or request.query == {
                "labelSelector": "app.kubernetes.io/managed-by=arenac"}, request
    assert touched == {names.application, names.harness}
    writes_in_harness = [r for r in served if r.method != "GET" and names.harness in r.path
                         and not OWN_NAMESPACE.match(r.path)]
    assert writes_in_harness == []  # the agent's access lives in the application namespace only
