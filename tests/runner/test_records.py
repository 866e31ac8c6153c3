"""Records on disk: atomic writes (serialize.write_atomic, records.write_json) and the run
directory's completeness marks (records.begin_run / finish_run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arenac.core.serialize import dump_json, write_atomic
from arenac.model.run import RunRecord
from arenac.rundir import INCOMPLETE, incomplete_reason, is_run_dir
from arenac.runner.bundle import open_bundle
from arenac.runner.options import EpisodeOptions
from arenac.runner.records import begin_run, finish_run, read_run_record, write_json
from helpers import ROOT
from helpers.golden import complete_variant


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# ---- atomic writes -------------------------------------------------------------------------------
def test_two_writers_of_one_path_both_succeed_and_one_complete_content_wins(tmp_path):
    target = tmp_path / "report.json"
    contents = {name: {"writer": name, "payload": [name] * 20_000} for name in ("a", "b")}  # ~200 kB each
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(name: str) -> None:
        try:
            start.wait()
            for _ in range(20):
                write_json(target, contents[name])
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(name,)) for name in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert json.loads(target.read_text()) in list(contents.values())
    assert leftovers(tmp_path) == []


def test_a_reader_never_sees_a_part(tmp_path):
    target = tmp_path / "verdict.json"
    write_json(target, {"n": 0, "pad": "x" * 100_000})
    done = threading.Event()
    seen: list[str] = []

    def write() -> None:
        for n in range(1, 200):
            write_json(target, {"n": n, "pad": "x" * 100_000})
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    while not done.is_set():
        text = target.read_text()
        try:
            json.loads(text)
        except ValueError:
            seen.append(text[-40:])
    thread.join()
    assert not seen, f"partial files read: {seen[:3]}"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "reward.json"
    target.write_text('{"reward": 1}\n')
    # a real failure halfway: the file size limit stops the write after 4 kB (EFBIG)
    program = ("import resource, signal, sys\n"
               "from arenac.core.serialize import write_atomic\n"
               "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
               "try:\n"
               f"    write_atomic({str(target)!r}, 'x' * 100_000)\n"
               "except OSError as error:\n"
               "    sys.exit(f'failed: {error.strerror}')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1 and "failed: File too large" in done.stderr, done.stderr
    assert target.read_text() == '{"reward": 1}\n'
    assert leftovers(tmp_path) == []


def test_an_unencodable_record_leaves_the_old_file(tmp_path):
    target = tmp_path / "run.json"
    write_json(target, {"ok": True})
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "\udc80")  # a lone surrogate: no UTF-8 for it
    with pytest.raises(TypeError):
        write_json(target, {"ok": object()})
    assert json.loads(target.read_text()) == {"ok": True}
    assert leftovers(tmp_path) == []


def test_an_atomic_write_gets_the_mode_an_ordinary_create_would(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    write_atomic(tmp_path / "a.json", "{}\n")
    (tmp_path / "b.json").write_text("{}\n")
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == (tmp_path / "b.json").stat().st_mode & 0o777


def test_the_verifier_writes_verdict_and_reward_atomically(tmp_path):
    from arenac.verify import write_results
    from arenac.verify.verdict import unscored

    (tmp_path / "reward.json").write_text("partial")
    write_results(tmp_path, unscored("t", "t-1", "void", "no manifestation"))
    assert json.loads((tmp_path / "reward.json").read_text()) == {"reward": 0, "outcome": False, "safe_repair": False}
    assert json.loads((tmp_path / "verdict.json").read_text())["status"] == "void"
    assert leftovers(tmp_path) == []


# ---- the run directory's marks ---------------------------------------------------------------------
GOLDEN = complete_variant("minimal")  # the golden bundle, with the chart files its manifest pins


def _bundle():
    return open_bundle(GOLDEN)


def _options(**changes):
    return EpisodeOptions(**{"agent": "noop", "inject_faults": True, "time_scale": 0.1, "out": Path("unused"),
                             **changes})


def test_a_run_is_marked_incomplete_from_its_first_write_until_it_finishes(tmp_path):
    out = tmp_path / "run"
    record = begin_run(out, _bundle(), _options())
    assert is_run_dir(out) and incomplete_reason(out) is not None
    bundle = _bundle()
    assert read_run_record(out) == RunRecord(task="minimal", variant=GOLDEN.name, bundle_digest=bundle.bundle_digest,
                                             agent="noop", inject_faults=True, time_scale=0.1, substrate="spine",
                                             access="scoped_kubectl", faults={"maint": "config"})
    finish_run(out, record, 41.5)
    assert incomplete_reason(out) is None and not (out / INCOMPLETE).exists()
    assert read_run_record(out).wall_s == 41.5
    assert (out / "run.json").read_text() == dump_json(json.loads((out / "run.json").read_text()))


def test_a_new_run_clears_an_earlier_run_and_nothing_else(tmp_path):
    out = tmp_path / "run"
    record = begin_run(out, _bundle(), _options())
    (out / "evidence").mkdir()
    (out / "evidence" / "timeline.json").write_text("{}\n")
    for name in ("events.jsonl", "agent.log", "verdict.json", "reward.json"):
        (out / name).write_text("earlier\n")
    (out / "notes.md").write_text("the operator's\n")
    finish_run(out, record, 1.0)
    begin_run(out, _bundle(), _options(agent="oracle"))
    assert sorted(p.name for p in out.iterdir()) == ["INCOMPLETE", "notes.md", "run.json"]
    assert read_run_record(out).agent == "oracle"


def test_a_directory_that_held_no_run_loses_nothing(tmp_path):
    out = tmp_path / "run"
    (out / "evidence").mkdir(parents=True)
    (out / "evidence" / "mine.txt").write_text("keep\n")
    (out / "events.jsonl").write_text("keep\n")  # without evidence/timeline.json: not a run directory
    begin_run(out, _bundle(), _options())
    assert (out / "evidence" / "mine.txt").read_text() == "keep\n" and (out / "events.jsonl").read_text() == "keep\n"


def test_a_run_record_of_another_shape_reads_as_none(tmp_path):
    (tmp_path / "run.json").write_text('{"format": 2}\n')
    assert read_run_record(tmp_path) is None
    assert read_run_record(tmp_path / "absent") is None
