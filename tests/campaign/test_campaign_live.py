"""`arenac campaign` end to end, as an operator runs it: real episodes in worker processes, the
results database, the summary, and a rerun that resumes (finished trials reused, a lost one run
again). Holds the machine's live lock (tests/livelock.py)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys

import pytest

from helpers import ROOT
from livelock import live_lock

CAMPAIGN = """\
k = 1
time_scale = 0.1

[agents]
oracle = "oracle"
noop = "noop"

[[variants]]
path = "{tasks}/revoked-grant.arena"
access = ["confined"]
"""


def _campaign(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenac.cli", "campaign", *args], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)


@pytest.mark.live
def test_a_campaign_runs_records_and_resumes(tmp_path):
    spec = tmp_path / "smoke.toml"
    spec.write_text(CAMPAIGN.format(tasks=(ROOT / "tasks").as_posix()), encoding="utf-8")
    out = tmp_path / "campaign"
    with live_lock():
        first = _campaign(str(spec), "--out", str(out))
        assert first.returncode == 0, first.stdout + first.stderr
        assert "Traceback" not in first.stdout + first.stderr
        lines = first.stdout.splitlines()
        assert "= 2 trials" in lines[0]
        assert any(line.startswith("[1/2] oracle on revoked-grant-") and ": scored, reward 1 (" in line
                   for line in lines)
        assert any(line.startswith("[2/2] noop on revoked-grant-") and ": scored, reward 0 (" in line
                   for line in lines)
        assert "campaign: 2 trial(s) run, 0 reused, 0 left" in lines
        table = lines[lines.index("campaign: 2 trial(s) run, 0 reused, 0 left") + 1:]
        assert table[0].split() == ["agent", "scored", "passed", "pass@1", "95%", "CI", "(tasks)", "void",
                                    "infra_error", "full", "fix", "pass", "given", "full", "fix"]
        assert table[1].split()[:4] == ["noop", "1", "0", "0%"] and table[2].split()[:4] == ["oracle", "1", "1", "100%"]
        with sqlite3.connect(out / "results.sqlite") as db:
            rows = db.execute("SELECT agent, status, reward, run_dir FROM trials ORDER BY agent").fetchall()
            failing = db.execute("SELECT COUNT(*) FROM checks WHERE agent = 'noop' AND passed = 0").fetchone()[0]
        assert [(a, s, r) for a, s, r, _ in rows] == [("noop", "scored", 0), ("oracle", "scored", 1)]
        assert failing >= 1  # the no-op's failing outcome checks, in the spec's units
        with sqlite3.connect(out / "results.sqlite") as db:
            taxonomy = dict((agent, (classes.split(","), full_fix)) for agent, classes, full_fix in db.execute(
                "SELECT agent, failure_classes, full_fix FROM trials"))
        # the oracle made its own repair; the no-op changed nothing and the fault stayed
        assert taxonomy["oracle"] == ([""], 1)
        assert {"outcome-not-restored", "no-change"} <= set(taxonomy["noop"][0]) and taxonomy["noop"][1] == 0
        assert all((out / run_dir / "verdict.json").is_file() for *_, run_dir in rows)

        again = _campaign(str(spec), "--out", str(out))
        assert again.returncode == 0, again.stdout + again.stderr
        assert "campaign: 0 trial(s) run, 2 reused, 0 left" in again.stdout
        assert "(reused)" in again.stdout

        shutil.rmtree(out / rows[0][3])  # the no-op's trial lost: run again, the oracle's reused
        third = _campaign(str(spec), "--out", str(out))
        assert third.returncode == 0, third.stdout + third.stderr
        assert "campaign: 1 trial(s) run, 1 reused, 0 left" in third.stdout


def test_a_campaign_refuses_an_out_that_holds_other_things(tmp_path):
    spec = tmp_path / "smoke.toml"
    spec.write_text(CAMPAIGN.format(tasks=(ROOT / "tasks").as_posix()), encoding="utf-8")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the operator's\n")
    result = _campaign(str(spec), "--out", str(out))
    assert result.returncode == 2 and "is not an arenac campaign directory" in result.stderr
    assert (out / "notes.txt").read_text() == "the operator's\n" and sorted(p.name for p in out.iterdir()) == [
        "notes.txt"]


def test_a_selector_that_selects_nothing_is_refused_at_its_line(tmp_path):
    spec = tmp_path / "smoke.toml"
    spec.write_text(CAMPAIGN.format(tasks=(ROOT / "tasks").as_posix()).replace('"confined"', '"nobody"'),
                    encoding="utf-8")
    result = _campaign(str(spec), "--out", str(tmp_path / "c"))
    assert result.returncode == 2
    assert result.stderr.startswith(f"arenac: {spec.as_posix()}:8:1: variants[0]: selects no variant ("), result.stderr
    assert "Traceback" not in result.stderr
