"""One trial on a cluster, the runner's side (arenac/runner/kube/cluster_trial.py), against a fake
Kubernetes API (kmock's in-memory emulator, not a cluster: tests/helpers/fake_kube.py, with its
stand-in workload controller and kubelet) and a fake of the harness pod's commands (`FakeHarnessPod`
below: no pod runs here; it answers `harness status` and `harness finish` as scripted and runs the
very archive command the pod would run on a recorded graded run). The agent is a real process,
started as `arenac run` starts one (no sandbox here), reaching a loopback stand-in of the pod's
broker port (tests/helpers/line_server.py) through the real relay.

Each path is checked for what it must do and what it must leave: the happy path's order of calls
(namespaces, install, RBAC, the pod, the handover, only then the agent's token, the revocation, the
teardown last), the run directory graded here and agreeing with the pod; and each failure (the
install's timeout, a pod never ready, an API error at the handover, a failed finish, a failed
teardown, a verdict that disagrees, no connection, a stop) an infra_error with nothing left on the
fake and the record removed, but for the failed teardown, which keeps it."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from arenac.bundle import MANIFEST, bundle_digest, sha256
from arenac.model.harness_status import HarnessStatus
from arenac.rundir import INCOMPLETE
from arenac.runner.bundle import open_bundle
from arenac.runner.kube import harness_pod as hp
from arenac.runner.kube.api import KubeError
from arenac.runner.kube.cluster_trial import (
    CLUSTER_RECORD,
    COLLECT_DIR,
    ClusterBounds,
    ClusterSeams,
    run_cluster_trial,
)
from arenac.runner.kube.install import RunnerValues, install_plan
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.streams import ExecResult, TcpRoutes
from arenac.runner.options import ClusterTarget, EpisodeOptions, Isolation
from helpers.fake_kube import (
    FAKE_TOKEN,
    SERVICE_ACCOUNTS,
    fail_requests,
    kmock,
    kubelet,
    secrets_as_data,
)
from helpers.golden import complete_variant
from helpers.line_server import LineServer
from helpers.report_runs import graded_run

TRIAL = "t1"
NAMES = trial_namespaces(TRIAL)
BOUNDS = ClusterBounds(install_s=20, objects_s=10, start_margin_s=5, agent_margin_s=20, finish_margin_s=5, exec_s=30,
                       teardown_s=10, poll_s=0.05, status_every_s=0.1, manifest_floor_s=0)
# the agent: it reads its kubeconfig (the agent's own log may hold its own token), then declares
AGENT = 'cmd:grep -c "token: " "$KUBECONFIG"; declare_repair_complete'
STEPS = ["connect", "register", "namespaces", "install", "chart load off", "agent rbac", "harness pod", "handover",
         "agent", "finish", "fetch", "teardown"]


def _status(phase: str, **fields) -> HarnessStatus:
    return HarnessStatus(phase=phase, pid=7, handed_over=phase != "provisioning", **fields)


class FakeHarnessPod:
    """A fake of the harness pod's commands, as the runner runs them by exec: `harness status` prints
    the next of `statuses` (the last repeats), `harness finish` answers `finish_code`, and the archive
    command (streams.archive_argv) really runs here, on `collected` in place of the pod's COLLECT_DIR."""

    def __init__(self, collected: Path, statuses: Sequence[HarnessStatus], finish_code: int = 0) -> None:
        self.collected, self.statuses, self.finish_code = collected, list(statuses), finish_code
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], timeout_s: float) -> ExecResult:
        argv = list(argv)
        self.calls.append(argv)
        if argv[:3] == ["arenac", "harness", "status"]:
            current = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            return ExecResult(0, current.model_dump_json().encode(), b"")
        if argv[:3] == ["arenac", "harness", "finish"]:
            assert argv[argv.index("--out") + 1] == COLLECT_DIR
            if self.finish_code:
                said = b"arenac harness finish: no grade within 5 s (phase agent_done)\n"
                return ExecResult(self.finish_code, b"", said)
            return ExecResult(0, b'{"status": "scored"}\n', b"")
        assert argv[0] == "python3" and argv[-1] == COLLECT_DIR, argv
        done = subprocess.run([sys.executable, *argv[1:-1], str(self.collected)], capture_output=True, timeout=60)
        return ExecResult(done.returncode, done.stdout, done.stderr)

    def commands(self) -> list[str]:
        return [" ".join(c[1:3]) if c[0] == "arenac" else "archive" for c in self.calls]


def _bundle_with_gates(tmp_path: Path, gates: bytes, replaced: dict[str, bytes] | None = None):
    """The golden `minimal` bundle with its verifier's gates replaced (its manifest made to pin them):
    the gates of the recorded run the fake pod hands back, so that grading here means something.
    `replaced`: other files' bytes, by path."""
    copy = tmp_path / "bundle"
    shutil.copytree(complete_variant("minimal"), copy)
    files = {"verifier/gates.json": gates, **(replaced or {})}
    for path, data in files.items():
        (copy / path).write_bytes(data)
    manifest = json.loads((copy / MANIFEST).read_text())
    for artefact in manifest["artefacts"]:
        if artefact["path"] in files:
            artefact["sha256"] = sha256(files[artefact["path"]])
    manifest.pop("bundle_digest")
    manifest["bundle_digest"] = bundle_digest(manifest)
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return open_bundle(copy)


@pytest.fixture
def pod_run(tmp_path):
    collected = tmp_path / "pod" / "collected"
    collected.mkdir(parents=True)
    graded_run(collected, "pass")
    return collected


@pytest.fixture
def bundle(tmp_path, pod_run):
    return _bundle_with_gates(tmp_path, (pod_run / "evidence" / "gates.json").read_bytes())


@pytest.fixture
def broker():
    server = LineServer()
    yield server
    server.close()


@pytest.fixture
def cluster(fake, monkeypatch, tmp_path):
    """The fake, as a cluster: Secrets stored as the API server stores them, the API server's endpoints."""
    monkeypatch.setenv("ARENAC_STATE_DIR", str(tmp_path / "state"))
    secrets_as_data(fake)
    fake.put(kmock.resource("", "v1", "endpoints"), "default", "kubernetes", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "kubernetes", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "172.18.0.2"}], "ports": [{"port": 6443, "protocol": "TCP"}]}]})
    return fake


def _seams(api, records, pod, broker, **changes) -> ClusterSeams:
    seams = ClusterSeams(connect=lambda _target: api, pod_exec=lambda *_: pod,
                         routes=lambda *_: TcpRoutes("127.0.0.1", broker.port), records=lambda: records,
                         trial_id=lambda _bundle: TRIAL, agent_account=lambda _root: (None, None))
    return replace(seams, **changes)


def _options(tmp_path, agent: str = AGENT) -> EpisodeOptions:
    return EpisodeOptions(agent=agent, time_scale=0.001, out=tmp_path / "run", isolation=Isolation(sandbox="none"),
                          cluster=ClusterTarget(context="kind-arenac"))


def _run(cluster, bundle, options, seams, *, ready: bool = True, stuck: dict | None = None, bounds=BOUNDS,
         stop=None):
    with cluster.controller(delay_s=0.02, stuck=stuck), kubelet(cluster, ready=ready):
        return run_cluster_trial(bundle, options, stop, seams, bounds)


def _left(fake) -> list:
    """Everything on the fake but what the test itself put in `default`."""
    return [entry for entry in fake.everything() if entry[1] != "default"]


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / CLUSTER_RECORD).read_text())


def _posts(fake) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.requests()]


def _index(calls: list[str], wanted: str) -> int:
    return next(i for i, call in enumerate(calls) if call == wanted)


# ---- the happy path ----------------------------------------------------------------------------------
def test_a_trial_runs_in_order_and_leaves_nothing(cluster, api, records, bundle, pod_run, broker, tmp_path) -> None:
    pod = FakeHarnessPod(pod_run, [_status("handed_over"), _status("agent_done")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker))
    run_dir = options.out
    assert (result.status, result.reward, result.reason) == ("scored", 1, ""), result
    assert not (run_dir / INCOMPLETE).exists()
    for name in ("run.json", "events.jsonl", "actions.jsonl", "agent.log", "verdict.json", "reward.json",
                 "evidence/timeline.json", CLUSTER_RECORD):
        assert (run_dir / name).exists(), name
    record = _record(run_dir)
    assert [s["step"] for s in record["steps"]] == STEPS and all(s["ok"] for s in record["steps"])
    assert (record["trial"], record["context"]) == (TRIAL, "kind-arenac")
    assert (record["application_namespace"], record["harness_namespace"]) == (NAMES.application, NAMES.harness)
    assert record["handed_over"] and record["teardown"] == "done" and not record["record_kept"]
    assert record["revoked"]["service_account_deleted"] and record["revoked"]["role_bindings"]
    assert record["freeze"]["method"] == "killpg" and record["freeze"]["remaining"] == 0
    assert record["pod_verdict"] == {"status": "scored", "reward": 1} and record["error"] is None
    # order: namespaces, the chart, the agent's RBAC, the pod's objects, the handover, only then the token,
    # then the revocation, the namespaces deleted last
    calls = _posts(cluster)
    first_ns = _index(calls, "POST /api/v1/namespaces")
    rbac = _index(calls, f"POST /apis/rbac.authorization.k8s.io/v1/namespaces/{NAMES.application}/roles")
    pod_post = _index(calls, f"POST /api/v1/namespaces/{NAMES.harness}/pods")
    token = _index(calls, f"POST /api/v1/namespaces/{NAMES.application}/serviceaccounts/arenac-agent/token")
    ready_read = max(i for i, c in enumerate(calls[:token]) if c == f"GET /api/v1/namespaces/{NAMES.harness}/pods/"
                     f"{hp.NAME}")
    revoke = _index(calls, f"DELETE /api/v1/namespaces/{NAMES.application}/serviceaccounts/arenac-agent")
    namespace_deletes = [i for i, c in enumerate(calls) if c.startswith("DELETE /api/v1/namespaces/arenac-")
                         and c.count("/") == 4]
    assert first_ns < rbac < pod_post < ready_read < token < revoke < min(namespace_deletes)
    # the chart's own load generator is switched off by its value: the pod runs the plan's load, never twice
    assert not [r for r in cluster.requests() if r.path.endswith("/deployments/arenac-loadgen")
                or (r.method == "POST" and r.path.endswith("/deployments") and r.body["metadata"]["name"]
                    == "arenac-loadgen")]
    assert record["chart_load_generators_scaled_to_zero"] == []
    # the agent: its kubeconfig held its token; its call reached the pod's broker with the pod's broker token
    assert [line.rstrip() for line in (run_dir / "agent.log").read_text().splitlines()] == [
        "1", "declare_repair_complete"]  # the count, then the stand-in broker's echo of its call
    (declare,) = broker.seen
    assert declare["tool"] == "declare_repair_complete"
    (token_secret,) = [r.body for r in cluster.requests() if r.method == "POST" and r.path.endswith("/secrets")
                       and r.body["metadata"]["name"] == hp.TOKEN_SECRET]
    assert declare["token"] == base64.b64decode(token_secret["data"]["token"]).decode()
    cluster_json = (run_dir / CLUSTER_RECORD).read_text()
    assert FAKE_TOKEN not in cluster_json and declare["token"] not in cluster_json and "/" + "tmp" not in cluster_json
    assert pod.commands()[-2:] == ["harness finish", "archive"]
    assert _left(cluster) == [] and records.records() == []


def test_a_bundle_without_the_load_generators_switch_has_it_scaled_to_zero(cluster, api, records, pod_run,
                                                                            broker, tmp_path) -> None:
    """A bundle compiled before `harness.loadgen.enabled`: its chart always creates the load generator,
    so the runner scales it to 0 before the pod runs the plan's load."""
    golden = complete_variant("minimal") / "chart"
    values = yaml.safe_load((golden / "values.yaml").read_text())
    del values["harness"]["loadgen"]
    template = (golden / "templates" / "loadgen.yaml").read_text().splitlines(keepends=True)
    older = "".join(line for line in template if line.strip() not in ("{{- if .Values.harness.loadgen.enabled }}",
                                                                     "{{- end }}"))
    assert older != "".join(template)
    bundle = _bundle_with_gates(tmp_path, (pod_run / "evidence" / "gates.json").read_bytes(),
                                {"chart/values.yaml": yaml.safe_dump(values, sort_keys=False).encode(),
                                 "chart/templates/loadgen.yaml": older.encode()})
    pod = FakeHarnessPod(pod_run, [_status("handed_over"), _status("agent_done")])
    result = _run(cluster, bundle, _options(tmp_path), _seams(api, records, pod, broker))
    assert (result.status, result.reward) == ("scored", 1), result
    requests = cluster.requests()
    pod_post = _index(_posts(cluster), f"POST /api/v1/namespaces/{NAMES.harness}/pods")
    (scaled,) = [i for i, r in enumerate(requests) if r.method == "PATCH"
                 and r.path == f"/apis/apps/v1/namespaces/{NAMES.harness}/deployments/arenac-loadgen"]
    assert requests[scaled].body == {"spec": {"replicas": 0}} and scaled < pod_post
    assert _record(tmp_path / "run")["chart_load_generators_scaled_to_zero"] == ["arenac-loadgen"]


def test_an_episode_void_before_its_handover_runs_no_agent(cluster, api, records, tmp_path, broker) -> None:
    collected = tmp_path / "pod" / "collected"
    collected.mkdir(parents=True)
    graded_run(collected, "void")
    bundle = _bundle_with_gates(tmp_path, (collected / "evidence" / "gates.json").read_bytes())
    pod = FakeHarnessPod(collected, [_status("graded", trial_status="void", reward=0, reason="never manifested")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker), ready=False)
    assert (result.status, result.reward) == ("void", 0) and "never manifested" in result.reason
    assert not any(c.endswith("/token") for c in _posts(cluster))  # no token: there was no handover
    assert broker.seen == [] and not (options.out / "agent.log").exists()
    assert [s["step"] for s in _record(options.out)["steps"]] == [s for s in STEPS if s != "agent"]
    assert _left(cluster) == [] and records.records() == []


@pytest.mark.parametrize("healthy", [False, True], ids=["faulted", "healthy"])
def test_the_healthy_control_installs_without_the_faults_and_the_pod_injects_none(
        cluster, api, records, bundle, pod_run, broker, tmp_path, healthy) -> None:
    pod = FakeHarnessPod(pod_run, [_status("handed_over"), _status("agent_done")])
    options = replace(_options(tmp_path), inject_faults=not healthy)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker))
    assert result.status == "scored", result
    (pod_body,) = [r.body for r in cluster.requests() if r.method == "POST"
                   and r.path == f"/api/v1/namespaces/{NAMES.harness}/pods"]
    assert ("--healthy" in pod_body["spec"]["containers"][0]["args"]) is healthy
    # the substrate's ConfigMaps created are the ones the install plan of that control renders, and
    # the two controls' differ for this bundle (its chart carries an overlay), so either would be told apart
    def config_maps(healthy_: bool) -> dict:
        plan = install_plan(bundle.directory / "chart", NAMES.application, NAMES.harness,
                            RunnerValues(time_scale=options.time_scale, fault_init=False, healthy=healthy_))
        return {o.name: o.body["data"] for o in plan.objects if o.kind == "ConfigMap" and o.name.startswith("spine-")}

    expected = config_maps(healthy)
    assert expected != config_maps(not healthy)
    created = {r.body["metadata"]["name"]: r.body["data"] for r in cluster.requests() if r.method == "POST"
               and r.path == f"/api/v1/namespaces/{NAMES.application}/configmaps"
               and r.body["metadata"]["name"].startswith("spine-")}
    assert created == expected
    run_record = json.loads((options.out / "run.json").read_text())
    assert (run_record["inject_faults"], run_record["backend"]) == (not healthy, "kubernetes")
    assert _left(cluster) == [] and records.records() == []


# ---- the failures: each an infra_error, nothing left ---------------------------------------------------
def _infra(result, says: str) -> None:
    assert (result.status, result.reward) == ("infra_error", 0), result
    assert says in result.reason, result.reason


def test_an_install_that_never_gets_ready_is_an_infra_error(cluster, api, records, bundle, pod_run, broker,
                                                             tmp_path) -> None:
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker),
                  stuck={"spine-gateway": "ImagePullBackOff"}, bounds=replace(BOUNDS, install_s=1.5))
    _infra(result, "install: the install is not ready within its 1.5 s")
    assert "ImagePullBackOff" in result.reason
    assert pod.calls == [] and not any(c.endswith("/pods") and c.startswith("POST") for c in _posts(cluster))
    record = _record(options.out)
    assert record["teardown"] == "done" and [s["step"] for s in record["steps"]][-2:] == ["install", "teardown"]
    assert json.loads((options.out / "verdict.json").read_text())["status"] == "infra_error"
    assert _left(cluster) == [] and records.records() == []


def test_a_pod_never_ready_is_an_infra_error_and_no_token_is_issued(cluster, api, records, bundle, pod_run, broker,
                                                                    tmp_path) -> None:
    pod = FakeHarnessPod(pod_run, [_status("provisioning")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker), ready=False,
                  bounds=replace(BOUNDS, start_margin_s=3))
    _infra(result, "handover: the harness pod was not handed over within")
    assert "episode provisioning" in result.reason
    assert not any(c.endswith("/token") for c in _posts(cluster))
    assert "harness finish" not in pod.commands()
    assert _left(cluster) == [] and records.records() == []


def test_an_api_error_at_the_handover_is_an_infra_error_and_the_agent_never_runs(cluster, api, records, bundle,
                                                                               pod_run, broker, tmp_path) -> None:
    fail_requests(cluster, "post", SERVICE_ACCOUNTS, 500, subresource="token")
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker))
    _infra(result, "agent: cannot get a token for ServiceAccount arenac-agent")
    assert "HTTP 500" in result.reason
    assert broker.seen == [] and not (options.out / "agent.log").exists()
    assert _record(options.out)["handed_over"] is True
    assert _left(cluster) == [] and records.records() == []


def test_a_failed_finish_is_an_infra_error_after_the_revocation(cluster, api, records, bundle, pod_run, broker,
                                                                tmp_path) -> None:
    pod = FakeHarnessPod(pod_run, [_status("handed_over")], finish_code=1)
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker))
    _infra(result, "finish: `arenac harness finish` in the pod failed (exit 1): arenac harness finish: no grade")
    record = _record(options.out)
    assert record["revoked"]["service_account_deleted"]
    assert "archive" not in pod.commands()
    assert _left(cluster) == [] and records.records() == []


def test_a_verdict_that_disagrees_with_the_pods_is_an_infra_error(cluster, api, records, bundle, pod_run, broker,
                                                                  tmp_path) -> None:
    verdict = json.loads((pod_run / "verdict.json").read_text())
    (pod_run / "verdict.json").write_text(json.dumps({**verdict, "reward": 0}))  # not what the evidence grades to
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker))
    _infra(result, "the harness pod graded the run scored (reward 0), the runner scored (reward 1)")
    assert _left(cluster) == [] and records.records() == []


def test_a_failed_teardown_is_an_infra_error_that_keeps_the_record(cluster, api, records, bundle, pod_run, broker,
                                                                   tmp_path) -> None:
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])
    options = _options(tmp_path)
    with cluster.controller(delay_s=0.02), kubelet(cluster):
        thread_error: list[BaseException] = []

        def stick_when_created() -> None:
            try:
                while NAMES.application not in cluster.names(kmock.resource("", "v1", "namespaces")):
                    pass
                cluster.stick(NAMES.application)
            except BaseException as error:  # pragma: no cover - surfaced below
                thread_error.append(error)

        sticker = threading.Thread(target=stick_when_created, daemon=True)
        sticker.start()
        result = run_cluster_trial(bundle, options, None, _seams(api, records, pod, broker),
                                   replace(BOUNDS, teardown_s=1))
        sticker.join(timeout=5)
        assert not thread_error
    _infra(result, "teardown: namespaces still there ")
    assert f"{NAMES.application} (Terminating)" in result.reason
    record = _record(options.out)
    assert record["teardown"] == "failed" and record["record_kept"]
    assert [r.trial for r in records.records()] == [TRIAL]  # kept: the next runner's cleanup retries it
    cluster.release(NAMES.application)


def test_no_connection_is_an_infra_error_with_nothing_to_tear_down(api, records, bundle, pod_run, broker,
                                                                   tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARENAC_STATE_DIR", str(tmp_path / "state"))
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])

    def refuse(_target):
        raise KubeError("cannot use /nowhere/kubeconfig: No such file or directory")

    options = _options(tmp_path)
    result = run_cluster_trial(bundle, options, None, _seams(api, records, pod, broker, connect=refuse), BOUNDS)
    _infra(result, "cannot use /nowhere/kubeconfig")
    record = _record(options.out)
    assert record["teardown"] == "none" and [s["step"] for s in record["steps"]] == ["connect"]
    assert records.records() == []


def test_a_stop_ends_the_trial_as_interrupted_and_tears_down(cluster, api, records, bundle, pod_run, broker,
                                                             tmp_path) -> None:
    stop = threading.Event()
    stop.set()
    pod = FakeHarnessPod(pod_run, [_status("handed_over")])
    options = _options(tmp_path)
    result = _run(cluster, bundle, options, _seams(api, records, pod, broker), stop=stop)
    _infra(result, "interrupted")
    assert result.reason == "interrupted"  # what resume and retry read to run it again
    assert pod.calls == [] and _left(cluster) == [] and records.records() == []



def test_trial_ids_are_label_values_that_never_repeat(bundle) -> None:
    from arenac.runner.kube.cluster_trial import new_trial_id
    from arenac.runner.kube.names import check_trial_id

    ids = {new_trial_id(bundle) for _ in range(50)}
    assert len(ids) == 50  # two runs of one variant never share namespaces
    for trial in ids:
        assert check_trial_id(trial) == trial and trial.startswith(bundle.plan.variant.lower()[:40])
    long = SimpleNamespace(plan=SimpleNamespace(variant="A" * 30 + "-" * 10 + "b" * 30))
    assert check_trial_id(new_trial_id(long)).startswith("a" * 30 + "-")


def test_the_bounds_follow_the_plan_and_the_time_scale(bundle) -> None:
    from arenac.k8s.capacity import TrialPhases

    phases = TrialPhases.from_plan(bundle.plan)
    bounds = ClusterBounds()
    slow, fast = bounds.handover_s(phases, 1.0), bounds.handover_s(phases, 0.1)
    assert slow > fast >= bounds.start_margin_s + bounds.manifest_floor_s  # the floor of a hung request
    assert bounds.agent_s(phases, 1.0) == phases.agent_window_s + bounds.agent_margin_s
    assert bounds.finish_s(phases, 1.0) > bounds.agent_s(phases, 1.0)  # the rest of the plan, at its bound
