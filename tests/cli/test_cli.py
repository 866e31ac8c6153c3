"""The CLI: commands, output formats and exit codes."""

from __future__ import annotations

import json

from helpers import ROOT, task_paths


def test_check_ok_and_error_exit_codes(cli):
    assert cli("check", "tasks").exit_code == 0
    bad = cli("check", "tests/diagnostics/04-unknown-route.arena")
    assert bad.exit_code == 1
    assert "error[E0203]: unknown route 'sned'" in bad.output
    assert "Traceback" not in bad.output


def test_missing_path_is_a_diagnostic_not_a_traceback(cli):
    result = cli("check", "no/such/file.arena")
    assert result.exit_code == 1
    assert "no such file or directory: no/such/file.arena" in result.output


def test_json_diagnostics_one_object_per_line(cli):
    result = cli("check", "--format", "json", "tests/diagnostics/33-multiple-errors.arena")
    records = [json.loads(line) for line in result.output.splitlines()]
    assert result.exit_code == 1 and len(records) == 2
    assert {r["code"] for r in records} == {"E0201"}
    assert records[0]["line"] == 4 and records[0]["column"] == 3


def test_variants_table_and_json(cli):
    table = cli("variants", "tasks")
    assert table.exit_code == 0 and "pruned:" in table.output and "built" in table.output
    rows = json.loads(cli("variants", "--format", "json", "tasks").output)
    assert {row["status"] for row in rows} == {"built", "pruned"}
    assert all(row["reason"] for row in rows if row["status"] == "pruned")


def test_compile_writes_bundles_and_verify_bundle_names_altered_files(cli, tmp_path):
    result = cli("compile", *task_paths(), "-o", str(tmp_path))
    assert result.exit_code == 0
    bundles = sorted(p.parent for p in tmp_path.glob("*/*/manifest.json"))
    assert bundles
    assert cli("verify-bundle", *map(str, bundles)).exit_code == 0
    target = bundles[0]
    (target / "oracle" / "solve.sh").write_text("echo pwned\n")
    (target / "rbac" / "role.yaml").unlink(missing_ok=True)
    (target / "extra.txt").write_text("x")
    checked = cli("verify-bundle", str(target))
    assert checked.exit_code == 3
    assert "altered: oracle/solve.sh" in checked.output
    assert "not in manifest: extra.txt" in checked.output
    assert "missing: rbac/role.yaml" in checked.output


def test_verify_bundle_catches_modes_and_manifest_edits_and_walks_a_build_tree(cli, tmp_path):
    assert cli("compile", "tasks/revoked-grant.arena", "tasks/slow-reads.arena", "-o", str(tmp_path)).exit_code == 0
    bundles = sorted(p.parent for p in tmp_path.glob("*/*/manifest.json"))
    whole_tree = cli("verify-bundle", str(tmp_path))
    assert whole_tree.exit_code == 0 and whole_tree.output.count("ok: ") == len(bundles) > 2
    first, second = bundles[0], bundles[1]
    (first / "oracle" / "solve.sh").chmod(0o644)  # same bytes, no longer executable
    manifest = json.loads((second / "manifest.json").read_text())
    manifest["arenac_version"] = "0.0.0"  # the manifest itself edited, every file intact
    (second / "manifest.json").write_text(json.dumps(manifest))
    checked = cli("verify-bundle", str(tmp_path))
    assert checked.exit_code == 3
    assert f"{first.as_posix()}: mode changed: oracle/solve.sh" in checked.output
    assert f"{second.as_posix()}: manifest.json itself was edited" in checked.output
    assert checked.output.count("ok: ") == len(bundles) - 2


def test_verify_bundle_usage_errors(cli, tmp_path):
    assert cli("verify-bundle", str(tmp_path / "nowhere")).exit_code == 2
    empty = cli("verify-bundle", str(tmp_path))
    assert empty.exit_code == 2 and "holds none" in empty.output


def test_an_unwritable_output_is_a_message_not_a_traceback(cli, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("keep me\n")
    for out in (blocker, blocker / "sub"):
        result = cli("compile", "tasks/revoked-grant.arena", "-o", str(out))
        assert result.exit_code == 2 and "cannot write bundles under" in result.output
        assert "Traceback" not in result.output
    assert blocker.read_text() == "keep me\n"  # nothing lost


def test_recompiling_removes_bundles_that_left_the_matrix_and_nothing_else(cli, tmp_path):
    spec = tmp_path / "pool.arena"
    spec.write_text((ROOT / "tests/golden/minimal/spec.arena").read_text())
    out = tmp_path / "build"
    assert cli("compile", str(spec), "-o", str(out)).exit_code == 0
    (old,) = [p.name for p in (out / "minimal").iterdir()]
    (out / "minimal" / "notes").mkdir()  # not a bundle: must survive
    spec.write_text(spec.read_text().replace("offset: 20s", "offset: 25s"))
    assert cli("compile", str(spec), "-o", str(out)).exit_code == 0
    left = sorted(p.name for p in (out / "minimal").iterdir())
    assert old not in left and "notes" in left and len(left) == 2


def test_schema_describes_the_plan(cli, tmp_path):
    schema = json.loads(cli("schema").output)
    assert schema["title"] == "Plan"
    assert {"timeline", "faults", "gates", "access", "challenges"} <= set(schema["properties"])
    cli("compile", "tasks/revoked-grant.arena", "-o", str(tmp_path))
    from arenac.model.plan import Plan

    for plan in tmp_path.glob("*/*/plan.json"):
        Plan.model_validate_json(plan.read_text())  # every written plan satisfies its schema's model
