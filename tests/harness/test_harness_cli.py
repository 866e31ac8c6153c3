"""`arenac harness ...` as commands, without a live stack: option parsing, the one-line refusals
(exit 2, nothing attempted) of a missing or invalid plan, an unknown fault, missing credentials;
a target that cannot be reached (exit 1, said in one line and in the JSON line); which faults an
onset selects; where the harness's hands reach on a cluster (the substrate's driver, from the
chart's own Secret); and the pieces shared with the local backend, which must stay as they were."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

import arenac.substrate.registry as registry
from arenac.cli import main
from arenac.cli.harness import ONSET_KINDS
from arenac.k8s.helm import render_chart
from arenac.loadgen.acks import AckLog
from arenac.model.plan import Plan
from arenac.model.task import Onset
from arenac.runner import local_load
from arenac.runner.harness_commands import HarnessInputError, harness_endpoints, injections, load_plan
from arenac.runner.harness_io import HarnessIO
from arenac.runner.onsets import fired_on
from arenac.substrate.interface import Endpoints
from arenac.substrate.spine.driver import DRIVER
from arenac.substrate.spine.in_cluster import acl_passwords
from helpers.harness_plans import chart_layer_burst, runs_sql, runtime_at_start

COMMANDS = {"inject", "trigger", "snapshot", "acked", "sample", "loadgen", "serve-evidence",
            "episode", "status", "finish"}


def run(*args: str):
    result = CliRunner().invoke(main, ["harness", *args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def unreachable(tmp_path) -> Path:
    """A stack's endpoints file whose every address refuses connections."""
    port = closed_port()
    url = f"http://127.0.0.1:{port}"
    dsn = f"postgresql://postgres:pw@127.0.0.1:{port}/spine"
    endpoints = Endpoints(gateway=url, services={name: url for name in DRIVER.services},
                          postgres={role: dsn for role in ("postgres", "spine_admin", "spine_app", "spine_operator")},
                          postgres_dsn=dsn, redis=f"redis://default:pw@127.0.0.1:{port}/0", redis_fanout="",
                          data_dir="", pids={}, admin_token="t", redis_harness=f"redis://harness:pw@127.0.0.1:{port}/0")
    path = tmp_path / "endpoints.json"
    path.write_text(endpoints.to_json())
    return path


# ---- the group and its options --------------------------------------------------------------
def test_the_group_lists_every_command_and_each_parses_its_help():
    listed = run("--help")
    assert listed.exit_code == 0
    listed_names = {line.split()[0] for line in listed.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed_names == COMMANDS
    for command in COMMANDS:
        helped = run(command, "--help")
        assert helped.exit_code == 0 and "--help" in helped.stdout, command


def test_the_onset_choices_are_the_models_onset_kinds():
    assert set(ONSET_KINDS) == set(typing.get_args(Onset.model_fields["kind"].annotation))


@pytest.mark.parametrize("args", [
    ["inject", "--target-namespace", "ns", "--onset", "at_start"],  # no --plan
    ["inject", "--plan", "p.json", "--onset", "sometimes"],
    ["loadgen", "--plan", "p.json", "--target", "http://x", "--time-scale", "0"],
    ["loadgen", "--plan", "p.json", "--target", "http://x", "--time-scale", "fast"],
    ["snapshot", "--plan", "p.json", "--label", "../up"],
    ["acked", "--plan", "p.json", "--label", "declaration"],
    ["serve-evidence", "--port", "70000"],
    ["trigger", "--plan", "p.json", "--fault", "x", "--bogus"],
])
def test_usage_errors_exit_2(args):
    result = run(*args)
    assert result.exit_code == 2 and "Usage:" in result.output


# ---- refusals: nothing attempted, exit 2, one line ---------------------------------------------
def _one_line_refusal(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arenac harness "), lines
    for fragment in fragments:
        assert fragment in lines[0]


def test_a_missing_or_invalid_plan_is_refused_in_one_line(tmp_path):
    _one_line_refusal(run("inject", "--plan", str(tmp_path / "none.json"), "--target-namespace", "ns",
                          "--onset", "at_start"), "cannot read it")
    bad = tmp_path / "plan.json"
    bad.write_text('{"task": "t"}')
    _one_line_refusal(run("snapshot", "--plan", str(bad), "--target-namespace", "ns", "--label", "baseline"),
                      "not a plan.json", "Field required")
    bad.write_text("not json")
    _one_line_refusal(run("loadgen", "--plan", str(bad), "--target", "http://x"), "not a plan.json")


def test_an_unknown_substrate_is_refused(plan_where, tmp_path):
    data = json.loads(plan_where(runtime_at_start).read_text())
    data["substrate"] = "nowhere"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(data))
    _one_line_refusal(run("trigger", "--plan", str(plan), "--fault", "x", "--target-namespace", "ns"),
                      "no driver for substrate 'nowhere'")


def test_an_unknown_fault_or_no_selection_is_refused_before_the_substrate_is_reached(plan_where, tmp_path):
    plan = str(plan_where(runtime_at_start))
    # the credentials are not even looked at: the fault is checked first
    _one_line_refusal(run("trigger", "--plan", plan, "--fault", "nope", "--target-namespace", "ns",
                          "--credentials", str(tmp_path / "none")), "no such fault (its faults: strict)")
    _one_line_refusal(run("inject", "--plan", plan, "--fault", "nope", "--target-namespace", "ns"), "--fault nope")
    _one_line_refusal(run("inject", "--plan", plan, "--target-namespace", "ns"), "--onset KIND, --fault NAME")


def test_missing_credentials_or_target_are_refused(plan_where, tmp_path):
    plan = str(plan_where(runtime_at_start))
    _one_line_refusal(run("inject", "--plan", plan, "--onset", "at_start"), "--target-namespace")
    _one_line_refusal(run("inject", "--plan", plan, "--onset", "at_start", "--target-namespace", "ns",
                          "--credentials", str(tmp_path / "none")), "cannot read it", "--endpoints")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "postgres-password").write_text("pw")
    _one_line_refusal(run("inject", "--plan", plan, "--onset", "at_start", "--target-namespace", "ns",
                          "--credentials", str(partial)), "lack spine-admin-password", "users.acl, token")
    broken = tmp_path / "endpoints.json"
    broken.write_text("{}")
    _one_line_refusal(run("snapshot", "--plan", plan, "--endpoints", str(broken), "--label", "baseline"),
                      "not a spine endpoints file")


def test_records_that_need_the_baseline_say_so(plan_where, unreachable, tmp_path):
    result = run("acked", "--plan", str(plan_where(runtime_at_start)), "--endpoints", str(unreachable),
                 "--run-dir", str(tmp_path / "run"), "--label", "soak_end")
    _one_line_refusal(result, "take the baseline snapshot first")


def test_an_unwritable_run_dir_is_refused(plan_where, unreachable, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("snapshot", "--plan", str(plan_where(runtime_at_start)), "--endpoints", str(unreachable),
                 "--run-dir", str(blocker / "run"), "--label", "baseline")
    _one_line_refusal(result, "cannot write there")


# ---- a target that cannot be reached: exit 1, one line, a JSON record --------------------------
def test_inject_and_trigger_at_an_unreachable_target_fail_with_the_reason(plan_where, unreachable, tmp_path):
    plan = str(plan_where(runtime_at_start))
    for args in (["inject", "--onset", "at_start"], ["trigger", "--fault", "strict"],
                 ["trigger", "--fault", "strict", "--recur"]):
        result = run(*args, "--plan", plan, "--endpoints", str(unreachable), "--run-dir", str(tmp_path / "run"))
        assert result.exit_code == 1, result.output
        record = json.loads(result.stdout.strip().splitlines()[-1])
        assert record["ok"] is False and "Connection refused" in record["error"]
        assert record["what"] in ("inject strict", "retrigger strict", "recur strict") and record["clock"] == "command"
        assert result.stderr.strip().splitlines() == [f"arenac harness {args[0]}: {record['what']}: {record['error']}"]


def test_snapshot_sample_and_loadgen_at_an_unreachable_target_fail_with_the_reason(plan_where, unreachable, tmp_path):
    plan = str(plan_where(runtime_at_start))
    runs = str(tmp_path / "run")
    snap = run("snapshot", "--plan", plan, "--endpoints", str(unreachable), "--run-dir", runs, "--label", "baseline")
    assert snap.exit_code == 1 and "cannot take the snapshot baseline: " in snap.stderr
    assert json.loads(snap.stdout)["ok"] is False
    waited = run("sample", "--plan", plan, "--endpoints", str(unreachable), "--run-dir", runs, "--wait-s", "0.2")
    assert waited.exit_code == 1 and "no load generator's ready file" in waited.stderr
    load = run("loadgen", "--plan", plan, "--target", f"http://127.0.0.1:{closed_port()}", "--run-dir", runs,
               "--time-scale", "0.1")
    assert load.exit_code == 1
    assert "loadgen: cannot log" in load.stderr and "the load generator stopped (exit 2)" in load.stderr


# ---- which faults an onset selects -------------------------------------------------------------
def _plans(compiled: Path) -> list[Plan]:
    return [Plan.model_validate_json(p.read_bytes()) for p in sorted(compiled.glob("*/*/plan.json"))]


def test_an_onset_selects_what_the_episode_fires_on_it(compiled):
    plans = _plans(compiled)
    for plan in plans:
        chosen = {kind: [f.name for f in injections(plan, kind, ())] for kind in ONSET_KINDS}
        # every fault with actions is fired on exactly one kind of onset; one without none
        assert sorted(n for names in chosen.values() for n in names) == sorted(f.name for f in plan.faults if f.inject)
        for fault in plan.faults:
            expected = fault.onset.kind if fault.layer == "runtime" else "at_start"
            assert fired_on(fault) == expected
    burst = next(p for p in plans if chart_layer_burst(p.model_dump(mode="json")))
    assert [f.name for f in injections(burst, "at_start", ())] == ["seq"]  # a chart layer's workload trigger
    at_start = next(p for p in plans if runtime_at_start(p.model_dump(mode="json")))
    assert [f.name for f in injections(at_start, "at_start", ("strict",))] == ["strict"]
    assert injections(at_start, "after", ("strict",)) == []
    with pytest.raises(HarnessInputError, match="no such fault"):
        injections(at_start, None, ("nope",))


# ---- the seam: where the hands reach on a cluster ---------------------------------------------
def _mounted_secrets(objects: list[dict], directory: Path) -> None:
    """The chart's two Secrets as a projected volume mounts them: one file per key, plus
    Kubernetes' own `..data` entries, which are not keys."""
    directory.mkdir()
    (directory / "..data").mkdir()
    for obj in objects:
        if obj["kind"] == "Secret" and obj["metadata"]["name"] in ("spine-credentials", "spine-admin-credential"):
            for key, value in obj["stringData"].items():
                (directory / key).write_text(value)


def test_the_cluster_endpoints_come_from_the_charts_services_and_secrets(plan_where, tmp_path):
    plan_path = plan_where(runtime_at_start)
    objects = render_chart(plan_path.parent / "chart", namespace="trial-7")
    _mounted_secrets(objects, tmp_path / "credentials")
    endpoints = harness_endpoints(load_plan(plan_path), "trial-7", tmp_path / "credentials", None)
    services = {o["metadata"]["name"]: o["spec"]["ports"][0]["port"] for o in objects if o["kind"] == "Service"}
    secret = next(o for o in objects if o["metadata"]["name"] == "spine-credentials")["stringData"]
    token = next(o for o in objects if o["metadata"]["name"] == "spine-admin-credential")["stringData"]["token"]
    # every service by its Service's DNS name and port, in the application's namespace
    for name, url in endpoints.services.items():
        assert url == f"http://spine-{name}.trial-7.svc:{services[f'spine-{name}']}"
    assert endpoints.gateway == endpoints.services["gateway"]
    assert services["spine-postgres"] == 5432 and services["spine-redis"] == 6379
    assert endpoints.postgres["postgres"] == (f"postgresql://postgres:{secret['postgres-password']}"
                                              "@spine-postgres.trial-7.svc:5432/spine")
    assert endpoints.postgres["spine_admin"].startswith(f"postgresql://spine_admin:{secret['spine-admin-password']}@")
    harness_password = acl_passwords(secret["users.acl"])["harness"]
    assert endpoints.redis_harness == f"redis://harness:{harness_password}@spine-redis.trial-7.svc:6379/0"
    # the application's own URL in the Secret names the same user and password (in its namespace)
    assert secret["redis-url"].replace("@spine-redis:", "@spine-redis.trial-7.svc:") == endpoints.redis
    assert endpoints.admin_token == token and endpoints.admin_headers() == {"Authorization": f"Bearer {token}"}
    assert set(endpoints.postgres) == {"postgres", "spine_admin", "spine_app", "spine_operator", "spine_readonly"}


def test_the_cluster_endpoints_are_the_plans_substrates_own(plan_where, tmp_path, monkeypatch):
    """The seam is the driver's: a second substrate's plan reaches its own Services."""
    monkeypatch.setitem(registry.DRIVERS, "toy", "substrate.toy_substrate:DRIVER")
    data = json.loads(plan_where(runtime_at_start).read_text())
    data["substrate"] = "toy"
    plan = Plan.model_validate(data)
    (tmp_path / "password").write_text("s3cret\n")
    endpoints = harness_endpoints(plan, "trial-9", tmp_path, None)
    assert endpoints.postgres["postgres"] == "postgresql://toy_admin:s3cret@toy-db.trial-9.svc:5432/toy"
    assert all(".trial-9.svc" in url and "spine" not in url for url in endpoints.services.values())


def test_an_endpoints_file_overrides_the_namespace(plan_where, unreachable):
    endpoints = harness_endpoints(load_plan(plan_where(runtime_at_start)), "ignored", Path("/nonexistent"), unreachable)
    assert endpoints == Endpoints.from_json(unreachable.read_text())


# ---- what the local backend shares: unchanged ---------------------------------------------------
def test_the_local_load_generator_runs_with_the_arguments_it_always_had(plan_where, tmp_path, monkeypatch):
    plan = load_plan(plan_where(runtime_at_start))
    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    def popen(argv, **kwargs):
        seen.append(argv)
        raise Stop

    monkeypatch.setattr(local_load.subprocess, "Popen", popen)
    ledger, live = tmp_path / "evidence" / "ledger.json", tmp_path / "live.json"
    with pytest.raises(Stop):
        local_load.start_loadgen(plan, "http://127.0.0.1:1", 0.1, ledger, tmp_path, live_file=live)
    assert seen == [[sys.executable, "-m", "arenac.loadgen", "--profile", str(tmp_path / "profile.json"),
                     "--target", "http://127.0.0.1:1", "--out", str(ledger), "--time-scale", "0.1",
                     "--ready-file", str(tmp_path / "loadgen.ready"), "--substrate", "spine", "--flush-s", "0.25",
                     "--acks-out", str(ledger.with_name("acks.jsonl")), "--anchor-unix", "0",
                     "--live-file", str(live)]]
    assert json.loads((tmp_path / "profile.json").read_text()) == plan.load.model_dump(mode="json")


def test_perform_all_carries_actions_out_in_order_and_returns_the_bursts(plan_where, unreachable, monkeypatch):
    io = HarnessIO(Endpoints.from_json(unreachable.read_text()), DRIVER)
    done: list[str] = []
    failing: set[str] = set()

    def perform(action):
        done.append(action.kind)
        if action.kind in failing:
            raise RuntimeError("refused")
        return {"accepted": 3, "refused": 0} if action.kind == "send_burst" else None

    monkeypatch.setattr(io, "perform", perform)
    sql = load_plan(plan_where(runs_sql)).faults[0].inject
    burst = load_plan(plan_where(chart_layer_burst)).faults[0].inject
    try:
        assert io.perform_all((*sql, *burst)) == [{"accepted": 3, "refused": 0}]
        assert done == [a.kind for a in (*sql, *burst)] and io.held_sessions == 0
        done.clear()
        failing.add("sql")
        with pytest.raises(RuntimeError, match="refused"):  # the first failure ends the list
            io.perform_all((*sql, *burst))
        assert done == ["sql"]
    finally:
        io.close()


def test_an_ack_log_kept_appends(tmp_path):
    path = tmp_path / "harness_acks.jsonl"
    first = AckLog(path, lambda: 1.0, source="harness", autoflush=True, keep=True)
    first.record(table="messages", id=1, channel="general", seq=5, author="ada", text="a")
    AckLog(path, lambda: 2.0, source="harness", autoflush=True, keep=True).record(
        table="messages", id=2, channel="general", seq=6, author="ada", text="b")
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == [1, 2]
    AckLog(path, lambda: 3.0)  # the episode's own: created empty, as before
    assert path.read_text() == ""


# ---- serve-evidence: read-only ------------------------------------------------------------------
def test_serve_evidence_serves_files_and_listings_and_nothing_else(tmp_path):
    import urllib.error
    import urllib.request

    root = tmp_path / "run"
    (root / "evidence" / "snapshots").mkdir(parents=True)
    (root / "evidence" / "ledger.json").write_text('{"ok": 1}\n')
    (root / "evidence" / "acks.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "secret.txt").write_text("not yours")
    (root / "evidence" / "leak").symlink_to(tmp_path / "secret.txt")
    server = subprocess.Popen([sys.executable, "-m", "arenac.cli", "harness", "serve-evidence", "--dir", str(root),
                               "--host", "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None
        url = json.loads(server.stdout.readline())["url"]

        def get(path: str, method: str = "GET"):
            request = urllib.request.Request(url + path, method=method, data=b"x" if method == "PUT" else None)
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.headers["Content-Type"], response.read()
            except urllib.error.HTTPError as error:
                return error.code, error.headers["Content-Type"], error.read()

        assert get("/evidence/ledger.json") == (200, "application/json", b'{"ok": 1}\n')
        assert get("/evidence/acks.jsonl")[:2] == (200, "application/x-ndjson")
        status, _, body = get("/evidence")
        assert status == 200 and json.loads(body) == {"path": "evidence", "entries": [
            {"name": "acks.jsonl", "type": "file", "size": 10}, {"name": "ledger.json", "type": "file", "size": 10},
            {"name": "snapshots", "type": "dir", "size": 0}]}
        assert [e["name"] for e in json.loads(get("/")[2])["entries"]] == ["evidence"]
        for escape in ("/../secret.txt", "/evidence/../../secret.txt", "/%2e%2e/secret.txt", "/evidence/leak",
                       "/evidence/none.json"):
            assert get(escape)[0] == 404, escape
        for method in ("PUT", "DELETE", "POST"):
            assert get("/evidence/ledger.json", method)[0] == 405
        assert (root / "evidence" / "ledger.json").read_text() == '{"ok": 1}\n'
        server.terminate()
        assert server.wait(timeout=10) == 0
    finally:
        server.kill()
        server.wait()


def test_serve_evidence_refuses_a_missing_directory(tmp_path):
    result = run("serve-evidence", "--dir", str(tmp_path / "none"), "--port", "0")
    assert result.exit_code == 2 and "not a directory" in result.stderr
