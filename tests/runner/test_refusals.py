"""Bad input to `arenac run` and `arenac qualify` is refused before anything is spent: one line on
stderr (`arenac: ...`), exit 2, no state record, no scratch directory, no run or qualification
directory, and fast. The good side is checked on the validators themselves (preflight.py), so that
no live episode starts here.

The commands are given a copy of the golden bundle with its instruction edited: were a refusal
missed, opening the bundle would refuse it (exit 3, which fails the test) before any episode
starts, so that a regression here never starts a stack on a shared machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from arenac.runner import preflight
from arenac.runner.launch import check_agent
from helpers import ROOT
from helpers.golden import complete_variant

GOLDEN = complete_variant("minimal")  # the golden bundle, with the chart files its manifest pins
SPEC = str(ROOT / "tests" / "golden" / "minimal" / "spec.arena")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """The golden bundle, tampered (see the module docstring); plan.json intact."""
    copy = tmp_path_factory.mktemp("bundle") / GOLDEN.name
    shutil.copytree(GOLDEN, copy)
    with open(copy / "instruction.md", "a") as instruction:
        instruction.write("tampered: a missed refusal stops at the manifest check\n")
    return copy


@pytest.fixture
def arenac(tmp_path):
    """Run the real CLI in a process of its own, in an empty working directory, with its own state
    directory and temporary directory (where an episode's scratch directory would appear)."""
    work, state, scratch = tmp_path / "work", tmp_path / "state", tmp_path / "tmp"
    for directory in (work, state, scratch):
        directory.mkdir()
    env = dict(os.environ, ARENAC_STATE_DIR=str(state), TMPDIR=str(scratch), PYTHONPATH=str(ROOT))

    def invoke(*args: str) -> subprocess.CompletedProcess:
        before = sorted(p.name for p in work.iterdir())
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "arenac.cli", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=60)
        done.elapsed = time.monotonic() - started
        assert not list(state.iterdir()), "a state record was written"
        assert not list(scratch.iterdir()), "a scratch directory was made"
        assert sorted(p.name for p in work.iterdir()) == before, "something was written in the working directory"
        return done

    invoke.work = work
    return invoke


def refused(done: subprocess.CompletedProcess, *words: str) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("arenac: "), done.stderr
    assert "Traceback" not in done.stderr + done.stdout and not done.stdout
    assert done.elapsed < 20, f"took {done.elapsed:.1f} s to refuse"
    for word in words:
        assert word in lines[0], lines[0]


# ---- arenac run ------------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["--agent", "bogus"], ["unknown agent 'bogus'"]),
    (["--agent", "adversary:nope"], ["unknown adversary 'nope'"]),
    (["--agent", "cmd:"], ["names no command"]),
    (["--agent", "cmd:no-such-program-here --flag"], ["'no-such-program-here' is not on the agent's PATH"]),
    (["--agent", "cmd:/no/such/agent"], ["/no/such/agent: no such file"]),
    (["--agent", "cmd:/usr"], ["/usr: not a file"]),
    (["--agent", "cmd:./agent.sh"], ["relative path"]),
    (["--agent", "cmd:echo 'unterminated"], ["is not a command /bin/sh can run", "Unterminated"]),
    (["--time-scale", "0"], ["--time-scale", "above 0"]),
    (["--time-scale", "-0.1"], ["--time-scale", "above 0"]),
    (["--time-scale", "nan"], ["--time-scale", "finite"]),
    (["--time-scale", "inf"], ["--time-scale", "finite"]),
    (["--time-scale", "fast"], ["--time-scale", "not a number"]),
    (["--sandbox", "chroot"], ["--sandbox"]),
])
def test_run_refuses_bad_input_before_starting_anything(arenac, bundle, args, words):
    refused(arenac("run", str(bundle), "--agent", "noop", *args), *words)


def test_run_refuses_a_program_that_is_not_executable(arenac, bundle, tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\ndeclare_repair_complete\n")
    script.chmod(0o644)
    refused(arenac("run", str(bundle), "--agent", f"cmd:{script} --fast"), f"{script}: not executable")


def test_run_refuses_a_bundle_that_does_not_exist(arenac):
    refused(arenac("run", "no/such/bundle", "--agent", "noop"), "BUNDLE", "does not exist")


def test_run_refuses_an_out_that_is_a_file_or_someone_elses_directory(arenac, bundle):
    afile = arenac.work / "notes.txt"
    afile.write_text("keep me\n")
    refused(arenac("run", str(bundle), "--agent", "noop", "--out", str(afile)), "is not a directory")
    assert afile.read_text() == "keep me\n"
    theirs = arenac.work / "theirs"
    (theirs / "evidence").mkdir(parents=True)  # an evidence folder alone does not make a run directory
    (theirs / "thesis.tex").write_text("\\begin{document}\n")
    refused(arenac("run", str(bundle), "--agent", "noop", "--out", str(theirs)), "not an arenac run directory")
    qualification = arenac.work / "qualification"
    qualification.mkdir()
    (qualification / "qualification.json").write_text("{}\n")  # a qualification directory is not a run directory
    refused(arenac("run", str(bundle), "--agent", "noop", "--out", str(qualification)),
            "not an arenac run directory")


def test_run_refuses_a_default_out_that_is_someone_elses(arenac, bundle):
    variant = bundle.name  # runs/<variant> without --out
    (arenac.work / "runs" / variant).mkdir(parents=True)
    (arenac.work / "runs" / variant / "draft.md").write_text("mine\n")
    refused(arenac("run", str(bundle), "--agent", "noop"), f"runs/{variant}", "not an arenac run directory")


# ---- arenac qualify --------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["-k", "0"], ["'-k'", "x>=1"]),
    (["-k", "-3"], ["'-k'"]),
    (["--adversarial", "--adversary-k", "0"], ["--adversary-k"]),
    (["--jobs", "0"], ["--jobs", "at least 1"]),
    (["--jobs", "-2"], ["--jobs", "at least 1"]),
    (["--jobs", str(4 * preflight.usable_cpus() + 1)], ["--jobs", "more than", "CPU"]),
    (["--jobs", "many"], ["--jobs", "not a whole number"]),
    (["--time-scale", "0"], ["--time-scale"]),
    (["--time-scale", "-inf"], ["--time-scale"]),
    (["--adversary", "nope"], ["unknown adversary 'nope'", "fix-now"]),
])
def test_qualify_refuses_bad_input_before_starting_anything(arenac, bundle, args, words):
    # and a spec: a qualification that went on would compile it into OUT/build first
    out = arenac.work / "q"
    refused(arenac("qualify", str(bundle), SPEC, "--out", str(out), *args), *words)
    assert not out.exists()


def test_qualify_refuses_paths_that_do_not_exist(arenac, bundle):
    refused(arenac("qualify", "no/such/spec.arena", str(bundle), "--out", str(arenac.work / "q")), "does not exist")


def test_qualify_refuses_an_out_that_is_not_a_qualification_directory(arenac, bundle):
    afile = arenac.work / "report.pdf"
    afile.write_bytes(b"%PDF")
    refused(arenac("qualify", str(bundle), SPEC, "--out", str(afile)), "is not a directory")
    theirs = arenac.work / "project"
    (theirs / "build" / "x").mkdir(parents=True)  # a build/ beside other things is someone's project
    (theirs / "Makefile").write_text("all:\n")
    refused(arenac("qualify", str(bundle), SPEC, "--out", str(theirs)), "not an arenac qualification directory")
    assert sorted(p.name for p in theirs.iterdir()) == ["Makefile", "build"]
    assert [p.name for p in (theirs / "build").iterdir()] == ["x"]  # nothing compiled into it
    run_dir = arenac.work / "a-run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{}\n")
    refused(arenac("qualify", str(bundle), SPEC, "--out", str(run_dir)), "not an arenac qualification directory")


# ---- the good side: the validators accept what is valid ------------------------------------------
@pytest.mark.parametrize("value", ["0.1", "1", "2.5", "1e-3", 0.1])
def test_a_positive_finite_time_scale_is_accepted(value):
    assert preflight.TimeScale().convert(value, None, None) == float(value)


def test_jobs_from_one_to_the_bound_are_accepted():
    limit, _ = preflight.max_jobs()
    assert limit >= min(4, preflight.AGENT_USERS)
    for jobs in (1, limit, str(limit)):
        assert preflight.Jobs().convert(jobs, None, None) == int(jobs)
    with pytest.raises(click.BadParameter):
        preflight.Jobs().convert(limit + 1, None, None)


@pytest.mark.parametrize("agent", [
    "oracle", "noop", "adversary:declare-now",
    "cmd:sleep 1; declare_repair_complete",  # what the noop agent runs
    "cmd:declare_repair_complete",  # a brokered tool: on the agent's PATH only
    "cmd:kubectl get pods && declare_repair_complete",
    "cmd:python3 -c 'print(1)'",
    "cmd:/bin/sh -c 'exit 0'",
    "cmd:FOO=1 BAR='a b' /usr/bin/env",  # assignments before the command
    "cmd:(cd / && ls) > out.txt",  # a subshell
    "cmd:>log.txt 2>&1 echo hi",  # a redirection first
    "cmd:$HOME/agent --model x",  # expanded by the shell: not known before it runs
    "cmd:~/bin/agent",
    "cmd:exec /bin/true",
    "cmd:if true; then echo yes; fi",
    "cmd:cat <<EOF\nit's here\nEOF",  # a here-document shlex cannot read (the shell can)
    "cmd:  true  ",
])
def test_valid_agents_are_not_refused(agent):
    assert check_agent(agent) is None


def test_an_out_that_is_absent_empty_or_of_the_right_kind_is_accepted(tmp_path):
    assert preflight.run_out_problem(tmp_path / "absent") is None
    assert preflight.qualification_out_problem(tmp_path / "absent") is None
    (tmp_path / "empty").mkdir()
    assert preflight.run_out_problem(tmp_path / "empty") is None
    assert preflight.qualification_out_problem(tmp_path / "empty") is None
    # an earlier run (this version's marks, or an earlier version's events beside a timeline)
    for name, files in {"run": ["run.json"], "crashed": ["INCOMPLETE"],
                        "legacy": ["events.jsonl", "evidence/timeline.json"]}.items():
        for file in files:
            (tmp_path / name / file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / file).write_text("{}\n")
        assert preflight.run_out_problem(tmp_path / name) is None, name
    # a qualification: its report, a run directory at TASK/VARIANT/RUN (stopped before the report),
    # or only build/ (stopped before the first episode)
    (tmp_path / "q1").mkdir()
    (tmp_path / "q1" / "qualification.json").write_text("{}\n")
    (tmp_path / "q2" / "minimal" / "minimal-729bb3c5" / "healthy-1").mkdir(parents=True)
    (tmp_path / "q2" / "minimal" / "minimal-729bb3c5" / "healthy-1" / "INCOMPLETE").write_text("")
    (tmp_path / "q3" / "build" / "minimal" / "minimal-729bb3c5").mkdir(parents=True)
    (tmp_path / "q3" / "build" / "minimal" / "minimal-729bb3c5" / "manifest.json").write_text("{}\n")
    for name in ("q1", "q2", "q3"):
        assert preflight.qualification_out_problem(tmp_path / name) is None, name


def test_the_default_run_dir_is_read_from_the_plan():
    assert preflight.default_run_dir(str(GOLDEN)) == Path("runs") / GOLDEN.name
    assert preflight.default_run_dir("no/such/bundle") is None


def test_the_tampered_bundle_stops_what_passes_every_check(arenac, bundle):
    # the safety net of this module: valid input reaches the manifest check, which refuses, exit 3
    done = arenac("run", str(bundle), "--agent", "cmd:sleep 1; declare_repair_complete", "--time-scale", "0.1")
    assert done.returncode == 3 and "altered: instruction.md" in done.stderr, done.stderr
    done = arenac("qualify", str(bundle), "--out", str(arenac.work / "q"), "--jobs", "2", "-k", "2")
    assert done.returncode == 3 and "altered: instruction.md" in done.stderr, done.stderr
