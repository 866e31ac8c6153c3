"""The kubernetes backend's settings on the command line and in a campaign file: `arenac run
--backend kubernetes --kubeconfig PATH --context C`, a campaign's `backend`, `kubeconfig`, `context`.
A mistake is refused before anything starts, in one line naming the file, exit 2, never a
traceback; good settings reach the trial's `EpisodeOptions.cluster` (the trial itself is replaced
by a recorder here: real trials on the fake API are tests/runner/kube/test_cluster_trial.py); and
the launcher removes what an interrupted run left on the cluster before it starts (on a fake
Kubernetes API: kmock's in-memory emulator, tests/helpers/fake_kube.py, not a cluster)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from arenac.campaign.spec_file import CampaignFileError, load_campaign
from arenac.cli import episodes
from arenac.runner.kube.names import trial_namespaces
from arenac.runner.kube.namespaces import create_trial_namespaces
from arenac.runner.kube.records import TrialRecords
from arenac.runner.launch import RunRefused, prepare
from arenac.runner.options import ClusterTarget, EpisodeResult, Isolation
from helpers.fake_kube import fake_kube_api
from helpers.golden import complete_variant

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "SERVER"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}, {name: other, context: {cluster: c, user: u}}]
current-context: ctx
"""


def _kubeconfig(tmp_path: Path, server: str = "https://127.0.0.1:1", text: str | None = None) -> Path:
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(text if text is not None else KUBECONFIG.replace("SERVER", server))
    return path


@pytest.fixture(scope="module")
def bundle() -> str:
    return complete_variant("minimal").as_posix()


def _run(cli, bundle, tmp_path, *args):
    return cli("run", bundle, "--agent", "noop", "--out", str(tmp_path / "run"), *args)


def _one_line(result, says: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arenac: ") and says in lines[0], result.stderr
    assert "Traceback" not in result.output


# ---- arenac run: refusals --------------------------------------------------------------------------
def test_a_kubeconfig_that_is_not_yaml_is_one_line_exit_2(cli, bundle, tmp_path) -> None:
    bad = _kubeconfig(tmp_path, text="clusters: [unclosed\n")
    _one_line(_run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(bad)),
              f"cannot use {bad}: not YAML (line 2, column 1)")


@pytest.mark.parametrize(("text", "says"), [
    ("just words\n", "not a kubeconfig"),
    ("[1, 2]\n", "not a kubeconfig"),
    (KUBECONFIG.replace("current-context: ctx\n", ""), "it has no current-context; name one with --context (ctx, "
                                                       "other)"),
])
def test_a_kubeconfig_of_the_wrong_shape_is_one_line_exit_2(cli, bundle, tmp_path, text, says) -> None:
    path = _kubeconfig(tmp_path, text=text)
    _one_line(_run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(path)), says)


def test_a_context_the_kubeconfig_lacks_is_named_with_those_it_has(cli, bundle, tmp_path) -> None:
    path = _kubeconfig(tmp_path)
    _one_line(_run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(path), "--context", "kind"),
              f"cannot use {path}: it has no context 'kind' (it has: ctx, other)")


def test_a_missing_kubeconfig_is_one_line_exit_2(cli, bundle, tmp_path) -> None:
    _one_line(_run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(tmp_path / "absent.yaml")),
              f"cannot use {tmp_path / 'absent.yaml'}: No such file or directory")


def test_cluster_settings_without_the_kubernetes_backend_are_refused(cli, bundle, tmp_path) -> None:
    path = _kubeconfig(tmp_path)
    _one_line(_run(cli, bundle, tmp_path, "--kubeconfig", str(path)),
              "--kubeconfig and --context are for --backend kubernetes")
    _one_line(_run(cli, bundle, tmp_path, "--backend", "local", "--context", "ctx"),
              "--kubeconfig and --context are for --backend kubernetes")


def test_qualify_on_a_cluster_refuses_the_adversarial_suite_and_a_bad_kubeconfig(cli, bundle, tmp_path) -> None:
    path = _kubeconfig(tmp_path)
    for extra in (["--adversarial"], ["--adversary", "declare-now"]):
        result = cli("qualify", bundle, "--backend", "kubernetes", "--kubeconfig", str(path),
                     "--out", str(tmp_path / "q"), *extra)
        _one_line(result, "--adversarial runs on the local backend only")
    result = cli("qualify", bundle, "--backend", "kubernetes", "--kubeconfig", str(tmp_path / "absent.yaml"),
                 "--out", str(tmp_path / "q"))
    _one_line(result, f"cannot use {tmp_path / 'absent.yaml'}: No such file or directory")
    assert not (tmp_path / "q").exists()


# ---- arenac run: the settings reach the trial --------------------------------------------------------
@pytest.fixture
def recorder(monkeypatch):
    seen: dict = {}
    plan = SimpleNamespace(variant="minimal-0000")

    def prepare_(dirs, isolation, cluster=None):
        seen["prepared_with"] = cluster
        return [SimpleNamespace(plan=plan)], threading.Event()

    def run_one(_bundle, options, _stop):
        seen["options"] = options
        options.out.mkdir(parents=True, exist_ok=True)
        return EpisodeResult(options.out, "infra_error", 0, False, False, 1.0, "recorded, not run")

    monkeypatch.setattr(episodes, "prepare", prepare_)
    monkeypatch.setattr(episodes, "run_one", run_one)
    return seen


def test_the_flags_reach_the_trials_options(cli, bundle, tmp_path, recorder) -> None:
    path = _kubeconfig(tmp_path)
    result = _run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(path), "--context", "other")
    assert result.exit_code == 5  # the recorder's infra_error
    target = ClusterTarget(kubeconfig=path.resolve(), context="other")
    assert recorder["options"].cluster == target and recorder["prepared_with"] == target


def test_the_local_backend_is_the_default(cli, bundle, tmp_path, recorder) -> None:
    assert _run(cli, bundle, tmp_path).exit_code == 5
    assert recorder["options"].cluster is None and recorder["prepared_with"] is None


def test_the_healthy_control_runs_on_a_cluster(cli, bundle, tmp_path, recorder) -> None:
    path = _kubeconfig(tmp_path)
    assert _run(cli, bundle, tmp_path, "--backend", "kubernetes", "--kubeconfig", str(path), "--healthy").exit_code == 5
    assert recorder["options"].cluster == ClusterTarget(kubeconfig=path.resolve())
    assert recorder["options"].inject_faults is False


def test_qualify_on_a_cluster_runs_every_control_there(cli, bundle, tmp_path, monkeypatch) -> None:
    seen: dict = {}

    def prepare_(dirs, isolation, cluster=None):
        seen["prepared_with"] = cluster
        return [], threading.Event()

    def qualify_(bundles, k, time_scale, out, jobs, stop, on_result, **keywords):
        seen.update(keywords)
        return SimpleNamespace(ok=True)

    monkeypatch.setattr(episodes, "prepare", prepare_)
    monkeypatch.setattr(episodes, "qualify", qualify_)
    monkeypatch.setattr(episodes, "print_table", lambda _report: None)
    path = _kubeconfig(tmp_path)
    result = cli("qualify", bundle, "--backend", "kubernetes", "--kubeconfig", str(path), "--context", "other",
                 "--out", str(tmp_path / "q"))
    assert result.exit_code == 0, result.output
    target = ClusterTarget(kubeconfig=path.resolve(), context="other")
    assert seen["cluster"] == target and seen["prepared_with"] == target
    assert cli("qualify", bundle, "--out", str(tmp_path / "q2")).exit_code == 0
    assert seen["cluster"] is None and seen["prepared_with"] is None


# ---- campaign files -----------------------------------------------------------------------------------
def _campaign(tmp_path: Path, bundle: str, extra: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f'{extra}\n[agents]\nnoop = "noop"\n\n[[variants]]\npath = "{bundle}"\n')
    return path


def test_a_campaign_file_names_the_cluster(tmp_path, bundle) -> None:
    _kubeconfig(tmp_path)
    loaded = load_campaign(_campaign(tmp_path, bundle, 'backend = "kubernetes"\nkubeconfig = "kubeconfig.yaml"\n'
                                                       'context = "ctx"'))
    spec = loaded.spec
    assert (spec.backend, spec.kubeconfig, spec.context) == ("kubernetes", "kubeconfig.yaml", "ctx")
    assert load_campaign(_campaign(tmp_path, bundle, "")).spec.backend == "local"


def test_a_campaign_backend_of_another_name_is_refused_at_its_line(tmp_path, bundle) -> None:
    with pytest.raises(CampaignFileError) as refused:
        load_campaign(_campaign(tmp_path, bundle, 'k = 1\nbackend = "helm"'))
    (problem,) = refused.value.problems
    assert (problem.line, problem.column) == (2, 1)
    assert "backend: input should be 'local' or 'kubernetes'" in problem.message


def test_a_campaigns_bad_kubeconfig_is_refused_at_its_key(cli, tmp_path, bundle) -> None:
    _kubeconfig(tmp_path, text="clusters: [unclosed\n")
    path = _campaign(tmp_path, bundle, 'backend = "kubernetes"\nkubeconfig = "kubeconfig.yaml"')
    result = cli("campaign", str(path), "--out", str(tmp_path / "out"))
    _one_line(result, f"{path.as_posix()}:2:1: kubeconfig: cannot use {tmp_path / 'kubeconfig.yaml'}: not YAML")
    assert not (tmp_path / "out").exists()


def test_a_local_campaign_with_a_context_is_refused_at_its_backend(cli, tmp_path, bundle) -> None:
    path = _campaign(tmp_path, bundle, 'backend = "local"\ncontext = "ctx"')
    result = cli("campaign", str(path), "--out", str(tmp_path / "out"))
    _one_line(result, f"{path.as_posix()}:1:1: backend: kubeconfig and context are for backend = \"kubernetes\"")


# ---- the launcher's cleanup of a cluster -------------------------------------------------------------
@pytest.fixture
def signals():
    """prepare() arms its own handlers for SIGINT and SIGTERM: the test run's are put back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_prepare_removes_an_interrupted_runs_namespaces_first(tmp_path, bundle, monkeypatch, capsys,
                                                              signals) -> None:
    from kubernetes.client import ApiClient, Configuration

    monkeypatch.setenv("ARENAC_STATE_DIR", str(tmp_path / "state"))
    records = TrialRecords.default()
    with fake_kube_api() as fake:
        configuration = Configuration()
        configuration.host = fake.url
        api = ApiClient(configuration)
        create_trial_namespaces(api, "gone", records.owner())  # a runner killed before it could tear down
        create_trial_namespaces(api, "elsewhere", "another-state-dir")  # another machine's: never touched
        path = _kubeconfig(tmp_path, server=fake.url)
        prepare([bundle], Isolation(sandbox="none"), cluster=ClusterTarget(kubeconfig=path))
        left = sorted(name for _, _, name in fake.everything())
        api.close()
    assert left == sorted([*trial_namespaces("elsewhere").by_role()[0][1:], trial_namespaces("elsewhere").harness])
    err = capsys.readouterr().err
    assert f"deleted namespace {trial_namespaces('gone').application} (trial gone, application: no record" in err


def test_prepare_refuses_when_the_cluster_cannot_be_cleaned(tmp_path, bundle, monkeypatch, signals) -> None:
    monkeypatch.setenv("ARENAC_STATE_DIR", str(tmp_path / "state"))
    path = _kubeconfig(tmp_path, server="http://127.0.0.1:9")  # nothing answers there
    with pytest.raises(RunRefused, match="the cleanup of earlier trials on the cluster failed: cannot list"):
        prepare([bundle], Isolation(sandbox="none"), cluster=ClusterTarget(kubeconfig=path))
