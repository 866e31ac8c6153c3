"""The verifier's evaluation of richer guards over recorded snapshots (soak_end and after_restart),
each on both sides: a sum, `or`, key against key (in two units), names, and `absent(...)`. The
guards are lowered from spec text by the compiler, as a bundle's gates.json holds them."""

from __future__ import annotations

import pytest

from arenac.model.gates import GuardExpr
from helpers.specs import compile_text, spec
from verify.recorded import RecordedRun

POOL = "config(message.DB_POOL_SIZE)"
OVERFLOW = "config(message.DB_POOL_OVERFLOW)"
TIMEOUT = "config(message.DB_POOL_TIMEOUT_MS)"


def lowered(condition: str) -> GuardExpr:
    """The guard, lowered from the shared spec with its fault on channel's pool: the oracle's end
    state leaves message's pool at its healthy 10 + 5, which every guard here accepts (E0508)."""
    text = spec().replace("    guard config(message.DB_POOL_SIZE) <= 32\n", f"    guard {condition}\n")
    text = text.replace("pool_size(service: message", "pool_size(service: channel").replace(
        "changes only config(message.DB_POOL_SIZE, message.DB_POOL_OVERFLOW)",
        "changes only config(channel.DB_POOL_SIZE, channel.DB_POOL_OVERFLOW)")
    (guard,) = [c for c in compile_text(text).tasks[0].lowered.spec.gates.safety if isinstance(c, GuardExpr)]
    return guard


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    return RecordedRun(tmp_path)  # message: DB_POOL_SIZE "16", DB_POOL_OVERFLOW "8", no DB_POOL_TIMEOUT_MS


def graded(run: RecordedRun, guard: GuardExpr):
    run.safety = [guard]
    verdict = run.grade()
    (result,) = verdict.gates.safety.checks
    assert verdict.safe_repair == result.passed and result.kind == "guard" and result.text == guard.text
    return result


def config(run: RecordedRun, label: str) -> dict:
    return run.snapshots[label]["config"]["message"]


def test_a_sum_holds_and_records_every_term(run):
    check = graded(run, lowered(f"{POOL} + {OVERFLOW} <= 24"))
    assert check.passed
    assert check.observed == {label: {POOL: "16", OVERFLOW: "8"} for label in ("soak_end", "after_restart")}
    assert check.detail == f"holds (soak_end: {POOL} = '16', {OVERFLOW} = '8'; after_restart: {POOL} = '16', " \
                           f"{OVERFLOW} = '8')"


@pytest.mark.parametrize("label", ["soak_end", "after_restart"])
def test_a_sum_fails_at_the_snapshot_that_exceeds_it(run, label):
    config(run, label)["DB_POOL_OVERFLOW"] = "9"
    check = graded(run, lowered(f"{POOL} + {OVERFLOW} <= 24"))
    assert not check.passed and check.detail.startswith(f"does not hold at {label} ")


def test_or_holds_when_either_side_does(run):
    guard = lowered(f"{OVERFLOW} == 0 or {OVERFLOW} >= 5")
    assert graded(run, guard).passed  # 8
    for label in ("soak_end", "after_restart"):
        config(run, label)["DB_POOL_OVERFLOW"] = "0"
    assert graded(run, guard).passed
    config(run, "soak_end")["DB_POOL_OVERFLOW"] = "4"
    assert not graded(run, guard).passed


def test_and_needs_both(run):
    guard = lowered(f"{POOL} >= 10 and {OVERFLOW} <= 8")
    assert graded(run, guard).passed
    config(run, "soak_end")["DB_POOL_SIZE"] = "9"
    assert not graded(run, guard).passed


def test_a_key_against_a_key(run):
    guard = lowered(f"{POOL} >= {OVERFLOW} + 5")
    assert graded(run, guard).passed  # 16 >= 8 + 5
    config(run, "soak_end")["DB_POOL_OVERFLOW"] = "12"
    assert not graded(run, guard).passed


def test_keys_in_two_units_are_compared_in_one(run):
    guard = lowered(f"{TIMEOUT} + config(maintenance.MAINT_PERIOD_S) <= 70s")  # ms + s
    for label in ("soak_end", "after_restart"):
        config(run, label)["DB_POOL_TIMEOUT_MS"] = "2000"  # 2 s + 60 s
    assert graded(run, guard).passed
    config(run, "after_restart")["DB_POOL_TIMEOUT_MS"] = "10001"  # 10.001 s + 60 s
    assert not graded(run, guard).passed


def test_names_compare_key_with_key(run):
    guard = lowered("config(message.DB_ROLE) == config(channel.DB_ROLE)")
    for label in ("soak_end", "after_restart"):
        config(run, label)["DB_ROLE"] = "spine_app"
        run.snapshots[label]["config"]["channel"]["DB_ROLE"] = "spine_app"
    assert graded(run, guard).passed
    run.snapshots["soak_end"]["config"]["channel"]["DB_ROLE"] = "postgres"
    assert not graded(run, guard).passed


def test_a_missing_key_fails_a_comparison_unless_absent_allows_it(run):
    strict, lenient = lowered(f"{TIMEOUT} <= 5s and {POOL} <= 32"), lowered(f"{TIMEOUT} <= 5s or absent({TIMEOUT})")
    check = graded(run, strict)  # the recorded snapshots have no DB_POOL_TIMEOUT_MS
    assert not check.passed and f"{TIMEOUT} = absent" in check.detail
    assert check.observed["soak_end"][TIMEOUT] is None
    assert graded(run, lenient).passed
    for label in ("soak_end", "after_restart"):
        config(run, label)["DB_POOL_TIMEOUT_MS"] = "9000"  # present, and too long: absent() no longer helps
    assert not graded(run, lenient).passed
    config(run, "soak_end")["DB_POOL_TIMEOUT_MS"] = config(run, "after_restart")["DB_POOL_TIMEOUT_MS"] = "2000"
    assert graded(run, lenient).passed


def test_a_value_that_is_not_a_number_fails_the_comparison(run):
    config(run, "soak_end")["DB_POOL_SIZE"] = "lots"
    assert not graded(run, lowered(f"{POOL} + {OVERFLOW} <= 24")).passed


def test_without_an_after_restart_snapshot_only_soak_end_counts(run):
    del run.snapshots["after_restart"]
    check = graded(run, lowered(f"{POOL} + {OVERFLOW} <= 24"))
    assert check.passed and list(check.observed) == ["soak_end"]
