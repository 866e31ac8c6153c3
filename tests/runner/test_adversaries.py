"""The adversarial suite's bookkeeping: the registry, `adversary:NAME` agents, qualification's
aggregation of strategy results and the CLI's errors. No episode runs here (the live strategy
episodes are in test_adversaries_live.py)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from arenac.cli import main
from arenac.pipeline import compile_paths, render_task, write_bundles
from arenac.render.oracle import ONSET_WAIT_MARK
from arenac.runner import adversaries
from arenac.runner import qualify as qualification
from arenac.runner.agents import AgentSpec
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeResult

SCRIPTS = Path(adversaries.__file__).parent / "scripts"
STDLIB = set(sys.stdlib_module_names) | {"_advlib"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    written = write_bundles(compile_paths(["tasks/revoked-grant.arena"]), out)
    return open_bundle(written[0].path)


# ---- the registry ---------------------------------------------------------------------------
def test_the_suite_has_at_least_twelve_must_fail_strategies_and_the_fix_now_control():
    names = adversaries.names()
    assert len(names) == len(set(names))
    assert sum(1 for s in adversaries.STRATEGIES if s.expected == "fail") >= 12
    assert [s.name for s in adversaries.STRATEGIES if s.expected == "pass"] == ["fix-now"]
    assert adversaries.get("fix-now").answer_key
    assert all(s.expected in ("pass", "fail") and s.description for s in adversaries.STRATEGIES)


def test_every_script_exists_and_nothing_else_is_shipped():
    shipped = {p.name for p in SCRIPTS.iterdir() if p.is_file() and p.suffix in (".py", ".sh")}
    assert shipped == {s.script for s in adversaries.STRATEGIES} | {adversaries.HELPER}


@pytest.mark.parametrize("path", sorted(p for p in SCRIPTS.iterdir() if p.suffix == ".py"), ids=lambda p: p.name)
def test_python_strategies_use_the_standard_library_only_and_never_arenac(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [(node.module or "").split(".")[0]]
        else:
            continue
        assert set(modules) <= STDLIB, f"{path.name} imports {modules}"


@pytest.mark.parametrize("strategy", adversaries.STRATEGIES, ids=lambda s: s.name)
def test_every_strategy_is_generic_and_declares(strategy):
    text = (SCRIPTS / strategy.script).read_text(encoding="utf-8")
    # written against the tools, not a task: no task, fault, service or table of the cohort by name
    tasks = {p.stem for p in Path("tasks").glob("*.arena")}
    # (statement_timeout is PostgreSQL's setting before it is a fault template's name)
    faults = {p.stem for p in Path("library/substrates/spine/faults").glob("*.yaml")} - {"statement_timeout"}
    words = set(re.findall(r"[a-z][a-z0-9_-]+", text))
    named = {"spine", "spine_app", "spine_operator", "messages", "read_consistency_strict"}
    assert not (words & (tasks | faults | named))
    if strategy.script.endswith(".py"):
        assert "main(attack)" in text or "declare()" in text  # _advlib.main declares whatever the attack did
    else:
        assert "declare_repair_complete" in text


def test_scripts_compile():
    for path in SCRIPTS.iterdir():
        if path.suffix == ".py":
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        elif path.suffix == ".sh":
            subprocess.run(["sh", "-n", str(path)], check=True)


def test_fix_now_strips_every_wait(tmp_path):
    (tmp_path / "solve.sh").write_text("#!/bin/sh\nset -eu\n# a comment\nkubectl patch configmap x -p '{}'\n"
                                       "kubectl rollout restart deployment/x\nkubectl rollout status deployment/x\n"
                                       "sleep 5\nwait-until-healthy --timeout 1m\nkubectl wait --for=x pod/y\n"
                                       "declare_repair_complete\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("kubectl", "wait-until-healthy", "declare_repair_complete", "sleep"):
        (tools / tool).write_text(f"#!/bin/sh\necho {tool} \"$@\" >> {tmp_path}/calls\n")
        (tools / tool).chmod(0o755)
    subprocess.run(["/bin/sh", str(SCRIPTS / "fix-now.sh")], cwd=tmp_path, check=True, capture_output=True,
                   env={"PATH": f"{tools}:/usr/bin:/bin"})
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["kubectl patch configmap x -p {}", "kubectl rollout restart deployment/x",
                     "declare_repair_complete", "declare_repair_complete"]


def test_fix_now_keeps_the_waits_before_a_fault_in_the_agents_window(tmp_path):
    """A wait the golden fix marks (a fault fires in the window after it) stays; the others go."""
    (tmp_path / "solve.sh").write_text("#!/bin/sh\nset -eu\nkubectl patch configmap x -p '{}'\n"
                                       f"sleep 2  {ONSET_WAIT_MARK}\nsleep 7\ndb-sql -c 'GRANT INSERT ON t TO r'\n"
                                       "wait-until-healthy --timeout 1m\ndeclare_repair_complete\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("kubectl", "wait-until-healthy", "declare_repair_complete", "sleep", "db-sql"):
        (tools / tool).write_text(f"#!/bin/sh\necho {tool} \"$@\" >> {tmp_path}/calls\n")
        (tools / tool).chmod(0o755)
    done = subprocess.run(["/bin/sh", str(SCRIPTS / "fix-now.sh")], cwd=tmp_path, check=True, capture_output=True,
                          text=True, env={"PATH": f"{tools}:/usr/bin:/bin"})
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["kubectl patch configmap x -p {}", "sleep 2", "db-sql -c GRANT INSERT ON t TO r",
                     "declare_repair_complete", "declare_repair_complete"]
    assert "kept wait: sleep 2" in done.stdout and "removed wait: sleep 7" in done.stdout


def test_the_golden_fix_marks_only_the_waits_before_an_in_window_fault():
    """cleanup-in-window's oracle waits 90 s for the revoked grant (marked); a task whose faults all
    fire before the handover has no marked wait, so fix-now strips all of them there."""
    marked = [line for line in _solve("cleanup-in-window").splitlines() if ONSET_WAIT_MARK in line]
    assert marked == [f"sleep 90  {ONSET_WAIT_MARK}"]
    assert ONSET_WAIT_MARK not in _solve("revoked-grant")
    assert ONSET_WAIT_MARK in (SCRIPTS / "fix-now.sh").read_text(encoding="utf-8")


def _solve(task: str) -> str:
    """The oracle/solve.sh of the task's first variant, rendered in memory."""
    compilation = compile_paths([f"tasks/{task}.arena"])
    (compiled,) = compilation.tasks
    spec = compiled.lowered.spec
    bundle = next(iter(render_task(compiled, compilation.library, compilation.sources[spec.source].text)))
    solve = bundle.files["oracle/solve.sh"]
    assert isinstance(solve, str)
    return solve


# ---- adversary:NAME agents ------------------------------------------------------------------
def test_an_adversary_agent_runs_its_script_from_the_working_directory(bundle):
    spec = AgentSpec.parse("adversary:declare-now", bundle.solve_script)
    assert spec.name == "adversary:declare-now"
    assert spec.command == "/bin/sh ./declare-now.sh"
    assert {p.name for p in spec.files} == {"declare-now.sh", "_advlib.py"}
    assert bundle.solve_script not in spec.files  # a must-fail strategy never gets the answer key
    spec = AgentSpec.parse("adversary:fix-now", bundle.solve_script)
    assert bundle.solve_script in spec.files
    spec = AgentSpec.parse("adversary:probe-loopback", bundle.solve_script)
    assert spec.command == "/usr/bin/python3 ./probe-loopback.py"
    assert all(p.is_file() for p in spec.files)


def test_an_unknown_adversary_names_the_suite(bundle):
    with pytest.raises(ValueError, match=r"unknown adversary 'nope': the suite has declare-now, .*fix-now"):
        AgentSpec.parse("adversary:nope", bundle.solve_script)


def test_start_agent_copies_the_files_into_the_working_directory(bundle, tmp_path):
    from arenac.runner.agents import AgentLaunch, start_agent
    from arenac.sandbox import SandboxChoice

    spec = AgentSpec.parse("adversary:fix-now", bundle.solve_script)
    spec = AgentSpec(spec.name, "true", spec.files)  # copy, but run nothing
    launch = AgentLaunch(workdir=tmp_path / "work", tools_dir=tmp_path, broker_dir=tmp_path,
                         instruction=bundle.instruction_bytes, oracle_script=b"# the pinned answer key\n",
                         log=tmp_path / "log", account=None, sandbox=SandboxChoice("none", "test"))
    agent = start_agent(spec, launch)
    agent.process.wait(timeout=10)
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["_advlib.py", "fix-now.sh", "instruction.md",
                                                                       "solve.sh"]
    # the answer key is the one pinned when the bundle was opened, never re-read from the bundle
    assert (tmp_path / "work" / "solve.sh").read_bytes() == b"# the pinned answer key\n"


# ---- qualification --------------------------------------------------------------------------
def _fake_episodes(monkeypatch, rewards: dict[str, int], statuses: dict[str, str] | None = None,
                   logs: dict[str, str] | None = None):
    """Episodes replaced by a recorder; the reward, status and agent log are looked up by
    run-directory prefix."""
    started = []

    def episode(bundle, options, stop):
        name = options.out.name.rsplit("-", 1)[0]
        started.append((name, options.agent, options.inject_faults))
        if logs and name in logs:
            options.out.mkdir(parents=True, exist_ok=True)
            (options.out / "agent.log").write_text(logs[name])
        default = 1 if name in ("healthy", "oracle", "adversary-fix-now") else 0
        reward = rewards.get(name, default)
        status = (statuses or {}).get(name, "scored")
        return EpisodeResult(options.out, status, reward, reward == 1, reward == 1, 1.0)

    monkeypatch.setattr(qualification, "run_episode", episode)
    return started


def test_adversarial_qualification_runs_every_strategy_once_and_reports_each(bundle, tmp_path, monkeypatch):
    started = _fake_episodes(monkeypatch, {})
    report = qualification.qualify([bundle], 2, 0.1, tmp_path, adversarial=True)
    assert report.ok is True and report.adversary_k == 1
    attacks = [s for s in started if s[1].startswith("adversary:")]
    assert sorted(a[1] for a in attacks) == sorted("adversary:" + n for n in adversaries.names())
    assert all(inject for _, _, inject in attacks)
    assert len(started) - len(attacks) == 3 * 2  # the controls keep their k
    summary = report.variants[0].adversaries
    assert summary.met == summary.total == len(adversaries.STRATEGIES)
    assert summary.passing == () and summary.unscored == ()
    run = summary.strategies["declare-now"].runs[0]
    assert run.model_dump() == {"status": "scored", "reward": 0, "outcome": False, "safe_repair": False,
                                "met": True, "wall_s": 1.0,
                                "run_dir": f"revoked-grant/{bundle.plan.variant}/adversary-declare-now-1"}
    assert summary.strategies["fix-now"].expected == "pass"
    assert (tmp_path / "qualification.json").is_file()


def test_a_passing_adversary_disqualifies_the_variant(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {"adversary-broaden-privileges": 1})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    variant = report.variants[0]
    assert variant.ok is False and report.ok is False
    assert all(c.ok for c in variant.controls.values())  # the controls alone would qualify it
    assert variant.adversaries.passing == ("broaden-privileges",)
    assert variant.adversaries.met == variant.adversaries.total - 1


NO_DOOR_LOG = ("[adversary    2.7s] SQL routes: none\n"
               "[adversary    2.7s] no door for the attack: no SQL route on this surface\n"
               "[adversary    2.8s] declaring the repair complete\n")


def test_the_no_door_line_is_read_from_a_strategy_log_and_nothing_else_is():
    assert adversaries.no_door(NO_DOOR_LOG) == "no SQL route on this surface"
    assert adversaries.no_door("[adversary    2.7s] vandalised messages: refused\n") is None
    assert adversaries.no_door("no door for the attack: not a strategy's log line\n") is None
    assert adversaries.no_door("") is None


def test_the_scripts_write_the_no_door_line_the_runner_reads():
    helper = (SCRIPTS / "_advlib.py").read_text()
    assert f'NO_DOOR = "{adversaries.NO_DOOR}"' in helper


def test_a_must_fail_attack_that_found_no_door_is_met_whatever_it_earned(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {"adversary-vandalise-then-fix": 1}, logs={"adversary-vandalise-then-fix": NO_DOOR_LOG})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    summary = report.variants[0].adversaries
    assert report.variants[0].ok is True and summary.passing == () and summary.no_door == ("vandalise-then-fix",)
    run = summary.strategies["vandalise-then-fix"].runs[0]
    assert run.met is True and run.no_door == "no SQL route on this surface"
    written = json.loads((tmp_path / "qualification.json").read_text())["variants"][0]["adversaries"]
    assert written["strategies"]["vandalise-then-fix"]["runs"][0]["no_door"] == "no SQL route on this surface"
    assert "no_door" not in written["strategies"]["declare-now"]["runs"][0]


def test_an_attack_that_found_its_door_and_earned_a_reward_is_still_a_finding(bundle, tmp_path, monkeypatch):
    landed = "[adversary    2.7s] vandalised messages: done\n"
    _fake_episodes(monkeypatch, {"adversary-vandalise-then-fix": 1}, logs={"adversary-vandalise-then-fix": landed})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    summary = report.variants[0].adversaries
    assert report.variants[0].ok is False and summary.passing == ("vandalise-then-fix",) and summary.no_door == ()


def test_no_door_never_excuses_the_fix_now_control(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {"adversary-fix-now": 0}, logs={"adversary-fix-now": NO_DOOR_LOG})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    summary = report.variants[0].adversaries
    assert report.variants[0].ok is False and summary.failed_controls == ("fix-now",) and summary.no_door == ()


def test_a_failing_fix_now_control_disqualifies_the_variant(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {"adversary-fix-now": 0})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    variant = report.variants[0]
    assert variant.ok is False
    assert variant.adversaries.failed_controls == ("fix-now",) and variant.adversaries.passing == ()


def test_a_void_or_infra_error_adversary_is_not_met(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {}, {"adversary-declare-now": "void", "adversary-probe-loopback": "infra_error"})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    summary = report.variants[0].adversaries
    assert report.variants[0].ok is False
    assert summary.unscored == ("declare-now", "probe-loopback") and summary.passing == ()


def test_a_subset_of_strategies_and_adversary_k(bundle, tmp_path, monkeypatch):
    started = _fake_episodes(monkeypatch, {})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True, adversary_k=2,
                                   strategies=["declare-now", "fix-now"])
    assert sorted(s[1] for s in started if s[1].startswith("adversary:")) == \
        ["adversary:declare-now"] * 2 + ["adversary:fix-now"] * 2
    assert set(report.variants[0].adversaries.strategies) == {"declare-now", "fix-now"}


def test_without_adversarial_nothing_changes(bundle, tmp_path, monkeypatch):
    started = _fake_episodes(monkeypatch, {})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path)
    assert len(started) == 3 and report.variants[0].adversaries is None and report.adversary_k is None
    written = json.loads((tmp_path / "qualification.json").read_text())  # absent from the file, not null
    assert "adversaries" not in written["variants"][0] and "adversary_k" not in written


def test_the_table_shows_a_compact_adversary_column():
    from arenac.cli.qualify_table import adversary_cell
    from arenac.model.report import AdversariesReport

    def summary(**fields) -> AdversariesReport:
        return AdversariesReport.model_validate({"ok": False, "strategies": {}, **fields})

    assert adversary_cell(summary(met=14, total=14, passing=[], failed_controls=[], unscored=[])) == "adv 14/14"
    assert adversary_cell(summary(met=11, total=14, passing=["read-answer-key"], failed_controls=["fix-now"],
                                  unscored=["probe-loopback"])) == \
        "adv 11/14; PASSED: read-answer-key; fix-now failed; not scored: probe-loopback"
    assert adversary_cell(summary(met=14, total=14, passing=[], failed_controls=[], unscored=[],
                                  no_door=["vandalise-then-fix"])) == "adv 14/14; no door: vandalise-then-fix"


# ---- the CLI --------------------------------------------------------------------------------
def test_run_with_an_unknown_adversary_is_a_usage_error(bundle):
    result = CliRunner().invoke(main, ["run", str(bundle.directory), "--agent", "adversary:nope"])
    assert result.exit_code == 2
    assert "unknown adversary 'nope'" in result.output and "fix-now" in result.output
    assert "Traceback" not in result.output


def test_run_with_an_unknown_agent_is_a_usage_error(bundle):
    result = CliRunner().invoke(main, ["run", str(bundle.directory), "--agent", "bogus"])
    assert result.exit_code == 2 and "adversary:NAME" in result.output


def test_qualify_with_an_unknown_adversary_is_a_usage_error(bundle):
    result = CliRunner().invoke(main, ["qualify", str(bundle.directory), "--adversary", "nope"])
    assert result.exit_code == 2 and "the suite has declare-now" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(main, ["qualify", str(bundle.directory), "--adversarial", "--adversary-k", "0"])
    assert result.exit_code == 2


def test_the_adversaries_command_lists_the_suite():
    result = CliRunner().invoke(main, ["adversaries"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) == len(adversaries.STRATEGIES)
    assert lines[-1].startswith("fix-now") and "must pass" in lines[-1] and "answer key" in lines[-1]


def test_the_cohort_table_shows_the_adversaries(bundle, tmp_path, monkeypatch, capsys):
    import importlib.util

    _fake_episodes(monkeypatch, {"adversary-read-answer-key": 1})
    qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    spec = importlib.util.spec_from_file_location("cohort", "bench/cohort.py")
    cohort = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cohort)
    cohort.main(str(tmp_path / "qualification.json"))
    out = capsys.readouterr().out
    total = len(adversaries.STRATEGIES)
    assert f"| adv {total - 1}/{total}; PASSED: read-answer-key | NO |" in out
    assert "| NO 1 |" in out and "ok 1 (must pass)" in out
    assert f"0/1 variants qualified; {2 + total}/{3 + total} episodes met their expectation" in out


def test_the_report_counts_episodes_by_status(bundle, tmp_path, monkeypatch):
    _fake_episodes(monkeypatch, {}, statuses={"adversary-probe-loopback": "void", "adversary-escape-freeze": "failed",
                                              "adversary-scale-to-zero": "infra_error"})
    report = qualification.qualify([bundle], 1, 0.1, tmp_path, adversarial=True)
    assert report.episodes.model_dump() == {"scored": 14, "failed": 1, "void": 1, "infra_error": 1, "total": 17}
    summary = report.variants[0].adversaries
    # a failed trial is a failure, scored: a must-fail strategy met; void and infra_error are not
    assert "adversary:escape-freeze" not in summary.unscored and "escape-freeze" not in summary.unscored
    assert report.ok is False
