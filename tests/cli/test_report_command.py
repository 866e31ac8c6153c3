"""`arenac report PATH [-o OUTDIR] [--plots N]`: exit 0 with the four files and the summary for a
run or a campaign directory, the same bytes when run again; any other path, one line on stderr,
exit 1, no traceback."""

from __future__ import annotations

import pytest

from helpers.report_runs import fake_campaign, graded_run

FILES = ("report.html", "junit.xml", "results.json", "trials.csv")


def test_a_campaign_is_reported_into_its_own_directory(cli, tmp_path):
    rows = fake_campaign(tmp_path / "c", [("oracle", "pool", 1, "pass"), ("noop", "pool", 1, "fail")])
    result = cli("report", str(tmp_path / "c"))
    assert result.exit_code == 0, result.output
    assert all((tmp_path / "c" / "report" / name).is_file() for name in FILES)
    assert f"{len(rows)} trial(s)" in result.output and "FAIL  error_rate(send) <= 1%" in result.output


def test_a_run_is_reported_where_asked(cli, tmp_path):
    graded_run(tmp_path / "run")
    result = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "out"), "--plots", "0")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(FILES)
    assert not (tmp_path / "run" / "report").exists()


def test_the_command_run_twice_writes_the_same_bytes(cli, tmp_path):
    fake_campaign(tmp_path / "c", [("oracle", "pool", 1, "pass"), ("noop", "pool", 1, "fail"),
                                   ("noop", "pool", 2, "void")])
    for out in ("first", "second"):
        assert cli("report", str(tmp_path / "c"), "-o", str(tmp_path / out)).exit_code == 0
    for name in FILES:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name
    assert "outcome-not-restored, no-change" in (tmp_path / "first" / "report.html").read_text()


@pytest.mark.parametrize("make", [lambda tmp: tmp / "absent", lambda tmp: tmp])
def test_a_path_that_is_neither_is_refused_in_one_line(cli, tmp_path, make):
    result = cli("report", str(make(tmp_path)))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arenac report: ") and "Traceback" not in result.output
    assert not (tmp_path / "report").exists()
