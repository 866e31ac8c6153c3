"""The diagnostics corpus: each bad spec's exact `arenac check` output is pinned.

A case is `NN-name.arena` (one spec) or a directory `NN-name/` checked as a whole (for
what cannot be one UTF-8 spec: a file that is not UTF-8, files without a task, a
directory without specs), each with its `NN-name.expected`. Refresh after an intended
change with `python tests/refresh.py` (every case and the golden bundles; `python
tests/refresh.py diagnostics` refreshes the cases only) and review the diff.

Codes that no spec can trigger (a missing path, a broken library, a substrate whose
service cannot restart, the parser's safety net) are pinned by the tests at the end, and
`test_every_documented_code_is_pinned` keeps docs/diagnostics.md and the pins in step.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import ROOT
from helpers.pinned import DIAGNOSTICS, check_output, check_output_of, corpus_cases
from helpers.pinned import expected_path as _expected

CORPUS = corpus_cases()


@pytest.mark.parametrize("spec", CORPUS, ids=[p.stem for p in CORPUS])
def test_diagnostic_text_is_pinned(spec: Path):
    expected = _expected(spec).read_text(encoding="utf-8")
    assert check_output(spec) == expected


def test_corpus_covers_at_least_25_distinct_errors():
    messages = set()
    for spec in CORPUS:
        text = _expected(spec).read_text(encoding="utf-8")
        warned_only = "warning[" in text and "error[" not in text  # a warning does not fail the spec
        assert text.endswith("exit code: 0\n" if warned_only else "exit code: 1\n"), spec.name
        messages.update(re.findall(r"error\[(E\d{4})\]: (.*)", text))
    assert len(messages) >= 25
    codes = {code for code, _ in messages}
    # every static check has a failing example
    for code in ("E0403", "E0501", "E0502", "E0507", "E0508", "E0509", "E0301", "E0404"):
        assert code in codes, code


def test_every_expected_file_belongs_to_a_case():
    cases = {_expected(case).name for case in CORPUS}
    assert {p.name for p in DIAGNOSTICS.glob("*.expected")} == cases


# ---- codes no single spec can trigger -------------------------------------------------

# code -> the test below that pins it
PINNED_HERE = {
    "E0100": "test_a_construct_the_transformer_cannot_read_is_reported_not_raised",
    # no spec reaches the RBAC lint's E0406 (lowering rejects those grants first): a hand-built surface does
    "E0406": "tests/validate/test_rbac_in_check.py::test_an_unallowed_grant_is_reported_at_the_access",
    "E0504": "test_a_service_the_substrate_cannot_restart",
    "E0601": "test_a_broken_library_file_is_reported_with_its_path",
    "E0602": "test_every_unreadable_path_is_reported_in_one_run",
}


def _documented_codes() -> set[str]:
    """Every code in docs/diagnostics.md's table, ranges such as E0110-E0117 spelled out."""
    codes = set()
    table = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    for low, high in re.findall(r"^\| (E\d{4})(?:[-–](E\d{4}))? \|", table, flags=re.MULTILINE):
        first, last = int(low[1:]), int((high or low)[1:])
        codes.update(f"E{number:04d}" for number in range(first, last + 1))
    return codes


def test_every_documented_code_is_pinned():
    """docs/diagnostics.md promises that the corpus pins every code: keep it true."""
    pinned = set(PINNED_HERE)
    for case in CORPUS:
        pinned.update(re.findall(r"(?:error|warning)\[(E\d{4})\]", _expected(case).read_text(encoding="utf-8")))
    documented = _documented_codes()
    assert len(documented) > 40
    assert documented - pinned == set(), "documented but never pinned"
    assert pinned - documented == set(), "pinned but not documented"


def test_every_unreadable_path_is_reported_in_one_run():
    """A missing path does not hide the other read errors: all come out together."""
    output = check_output_of("no/such/spec.arena", "tests/diagnostics/59-not-utf8", "tests/diagnostics/60-no-specs",
                             "tests/diagnostics/61-no-task/empty.arena")
    assert output.splitlines()[0] == "error[E0602]: no such file or directory: no/such/spec.arena"
    for code in ("E0602", "E0603", "E0604", "E0605"):
        assert f"error[{code}]" in output, code
    assert "4 errors\nexit code: 1\n" in output and "Traceback" not in output


def test_an_unreadable_file_is_reported_without_a_traceback(monkeypatch):
    real = Path.read_bytes

    def refuse(self):
        if self.name == "revoked-grant.arena":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    output = check_output_of("tasks/revoked-grant.arena")
    assert output == ("error[E0603]: cannot read tasks/revoked-grant.arena: permission denied\n1 error\n"
                      "exit code: 1\n")


def test_an_empty_directory_is_an_error_for_check_and_compile(tmp_path):
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    for command in (["check"], ["compile", "-o", str(tmp_path / "out")]):
        output = check_output_of(str(empty), command=command)
        assert f"error[E0604]: no .arena file under directory {empty}" in output
        assert output.endswith("exit code: 1\n")
    assert not (tmp_path / "out").exists()


def test_library_modules_are_not_specs_without_a_task():
    """`arenac fmt library/...` reads library modules through the same door: they hold no task."""
    from arenac.pipeline import read_sources

    sources = read_sources(["library/substrates/spine/profiles.arena"])
    assert list(sources) == ["library/substrates/spine/profiles.arena"]


def test_a_construct_the_transformer_cannot_read_is_reported_not_raised(monkeypatch):
    """E0100 is the parser's safety net: no known input reaches it (tests/pipeline/test_fuzz.py
    hunts for one), so a transformer failure is simulated."""
    from arenac.lower.library import library_macros, load_library
    from arenac.pipeline import clear_parse_cache
    from arenac.syntax.transform import ToAst

    def broken(self, children):
        raise ValueError("simulated")

    load_library(), library_macros()  # the library's own modules are read before the break
    clear_parse_cache()  # and the spec is parsed again after it
    monkeypatch.setattr(ToAst, "number", broken)
    output = check_output_of("tests/diagnostics/34-out-of-range.arena")
    assert output.startswith("tests/diagnostics/34-out-of-range.arena:9:56: error[E0100]: cannot read this number "
                             "(simulated)\n")
    assert output.endswith("exit code: 1\n") and "Traceback" not in output


@pytest.fixture
def scratch_library(tmp_path, monkeypatch):
    """A copy of the library that the compiler loads instead of the real one."""
    from arenac.lower import library

    root = tmp_path / "library"
    shutil.copytree(library.library_root(), root, ignore=shutil.ignore_patterns("__pycache__", "chart"))
    monkeypatch.setattr(library, "library_root", lambda: root)
    library.clear_library_cache()
    yield root
    library.clear_library_cache()


def test_a_broken_library_file_is_reported_with_its_path(scratch_library):
    fault = scratch_library / "substrates" / "spine" / "faults" / "pool_size.yaml"
    fault.write_text(fault.read_text(encoding="utf-8").replace("layers:", "layerz:", 1), encoding="utf-8")
    output = check_output_of("tasks/revoked-grant.arena")
    assert output == ("error[E0601]: invalid fault template library/substrates/spine/faults/pool_size.yaml: "
                      "layers: Field required\n1 error\nexit code: 1\n")


def test_a_service_the_substrate_cannot_restart(scratch_library):
    descriptor = scratch_library / "substrates" / "spine" / "substrate.yaml"
    text = descriptor.read_text(encoding="utf-8")
    descriptor.write_text(text.replace("  - name: message\n", "  - name: message\n    restartable: false\n", 1),
                          encoding="utf-8")
    output = check_output_of("tasks/revoked-grant.arena")
    assert "error[E0504]: service 'message' cannot be restarted" in output
    assert "    survives restart(message)\n   |                      ^~~~~~~\n" in output
    assert output.endswith("1 error\nexit code: 1\n")


# ---- a chart value's `touches`: what the fault template says the value becomes ------------------
def _with_fault_removed(tmp_path, task: str, check: str) -> str:
    """A copy of tasks/TASK.arena whose safety gate also asks `CHECK`, written under TMP_PATH."""
    text = (ROOT / "tasks" / f"{task}.arena").read_text(encoding="utf-8")
    spec = tmp_path / f"{task}.arena"
    spec.write_text(text.replace("  gate safety {\n", f"  gate safety {{\n    {check}\n", 1), encoding="utf-8")
    return str(spec)


def _edit_fault(library_root, name: str, old: str, new: str) -> None:
    fault = library_root / "substrates" / "spine" / "faults" / f"{name}.yaml"
    text = fault.read_text(encoding="utf-8")
    assert old in text
    fault.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(("task", "check"), [("durable-queue-memory", "fault removed(memory)"),
                                             ("durable-queue-acl", "fault removed(acl)")])
def test_fault_removed_of_a_datastore_chart_value_is_checked(tmp_path, task, check):
    """The config layer's chart value declares the live Redis setting it becomes: E0531 no more."""
    assert check_output_of(_with_fault_removed(tmp_path, task, check)) == "ok: 1 task(s), 2 variant(s)\nexit code: 0\n"


def test_fault_removed_of_a_chart_value_without_touches_is_refused(tmp_path, scratch_library):
    """Without `touches`, a chart value outside `services.` is tied to no recorded state: E0531 stays."""
    _edit_fault(scratch_library, "redis_maxmemory", '"{size}", touches: [{kind: redis, ref: maxmemory}]}', '"{size}"}')
    spec = _with_fault_removed(tmp_path, "durable-queue-memory", "fault removed(memory)")
    healthy = '  healthy {\n    config(redis.appendonly) = "yes"\n  }\n\n'  # the copy has no chart to check it by
    text = Path(spec).read_text(encoding="utf-8")
    assert healthy in text
    Path(spec).write_text(text.replace(healthy, ""), encoding="utf-8")
    assert check_output_of(spec) == (
        f"{spec}:30:5: error[E0531]: `fault removed(memory)`: the injection of 'memory' at the config layer sets "
        "only the chart value redis.maxmemory, which declares no recorded setting it becomes (`touches`), so "
        "whether it was removed cannot be told (in 2 variants)\n"
        "   |\n"
        "30 |     fault removed(memory)\n"
        "   |     ^~~~~~~~~~~~~~~~~~~~~\n"
        "   = hint: judge it by its outcome, or `survives retrigger`\n"
        "1 error\nexit code: 1\n")


@pytest.mark.parametrize(("touches", "message"), [
    ("{kind: redis, ref: maxmemroy}", "a chart value cannot touch redis(maxmemroy): 'maxmemroy' is not a Redis "
     "setting the snapshots record (maxmemory, maxmemory-policy, maxmemory-samples, appendonly, appendfsync, "
     "min-replicas-to-write, min-replicas-max-lag) nor an ACL user (acl.USER)"),
    ("{kind: session, ref: spine_app}", "a chart value cannot touch session(spine_app): the state snapshots hold "
     "no 'session' item (they hold config, db_setting, event, grant, membership, redis, release, role, sequence)"),
    ("{kind: memory, ref: maxmemory}", "touches.0.kind: Input should be 'config', 'event', 'release', "
     "'db_setting', 'grant', 'table', 'redis', 'session', 'sequence', 'role' or 'membership'"),
])
def test_a_chart_values_touches_are_checked_when_the_library_loads(scratch_library, touches, message):
    _edit_fault(scratch_library, "redis_maxmemory", '"{size}", touches: [{kind: redis, ref: maxmemory}]}',
                f'"{{size}}", touches: [{touches}]}}')
    output = check_output_of("tasks/revoked-grant.arena")
    assert output.startswith("error[E0601]: invalid fault template library/substrates/spine/faults/"
                             "redis_maxmemory.yaml: layers.config.inject.0.values.")
    assert message in output and output.endswith("1 error\nexit code: 1\n")
