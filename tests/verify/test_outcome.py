"""Outcome predicates on recorded evidence: every metric kind passing and failing, windows,
baseline arithmetic, undefined metrics."""

from __future__ import annotations

import pytest

from arenac.verify.outcome import compare
from arenac.verify.quantile import allowed_over
from verify.recorded import RATES, SOAK, RecordedRun, binop, const, metric, pred


@pytest.fixture
def run(tmp_path) -> RecordedRun:
    return RecordedRun(tmp_path)


def only(run: RecordedRun, *predicates):
    """Grade with just these outcome predicates; return their checks."""
    run.outcome = list(predicates)
    verdict = run.grade()
    assert verdict.status == "scored"
    return verdict.gates.outcome.checks


def one(run: RecordedRun, predicate):
    (check,) = only(run, predicate)
    return check


# ---- error_rate ---------------------------------------------------------------------------
ERRORS = pred("error_rate(send) <= 1%", metric("error_rate", "send"), "<=", const(0.01, "fraction"))


def test_error_rate_passes_on_a_clean_soak(run):
    check = one(run, ERRORS)
    assert check.passed and check.observed == 0.0 and check.threshold == 0.01
    assert (check.window.start_s, check.window.end_s) == SOAK


def test_error_rate_fails_when_sends_fail_in_the_soak(run):
    run.traffic("send", 140, 260, errors=1)  # one send per second fails: 120 of 1800
    check = one(run, ERRORS)
    assert not check.passed
    assert check.observed == pytest.approx(120 / 1800)
    assert "120 errors / 1800 requests" in check.detail


def test_errors_outside_the_soak_do_not_count(run):
    run.traffic("send", 100, 140, errors=5)  # during the agent window
    run.traffic("send", 260, 320, errors=5)  # after the soak
    assert one(run, ERRORS).passed


def test_error_rate_filters_by_route(run):
    run.traffic("read", 140, 260, errors=3)
    assert one(run, ERRORS).passed
    read = pred("error_rate(read) <= 1%", metric("error_rate", "read"), "<=", const(0.01, "fraction"))
    assert not one(run, read).passed


# ---- goodput and throughput ------------------------------------------------------------------
GOODPUT = pred("goodput >= 36/s", metric("goodput"), ">=", const(36.0, "rate"))
THROUGHPUT = pred("throughput >= 36/s", metric("throughput"), ">=", const(36.0, "rate"))


def test_goodput_passes_at_the_profile_rate(run):
    check = one(run, GOODPUT)
    assert check.passed and check.observed == pytest.approx(37.5)


def test_goodput_fails_when_requests_fail(run):
    run.traffic("read", 140, 260, errors=2)  # 240 of 4500 fail: 35.5/s good
    check = one(run, GOODPUT)
    assert not check.passed and check.observed == pytest.approx((4500 - 240) / 120)


def test_throughput_counts_failed_requests_too(run):
    run.traffic("read", 140, 260, errors=2)
    assert one(run, THROUGHPUT).passed


def test_throughput_fails_when_fewer_requests_were_sent(run):
    run.traffic("read", 140, 260, rate=20)  # the generator fell behind
    check = one(run, THROUGHPUT)
    assert not check.passed and check.observed == pytest.approx((1800 + 2400) / 120)


def test_goodput_of_a_phase_is_per_second_of_that_phase(run):
    peak = pred("goodput(phase: peak) >= 57/s", metric("goodput", phase="peak"), ">=", const(57.0, "rate"))
    check = one(run, peak)
    assert check.passed and check.observed == pytest.approx(60.0)
    run.traffic("send", 140, 170, errors=8)  # a third of the sends fail in the first peak
    check = one(run, peak)
    assert not check.passed and check.observed == pytest.approx(60 - 8 * 30 / 60)


def test_rates_are_per_real_second_at_a_compressed_time_scale(tmp_path):
    run = RecordedRun(tmp_path, time_scale=0.1)  # a plan second lasts 0.1 s: 3 sends + 1 read in it
    run.traffic("send", 140, 260, rate=30)
    run.traffic("read", 140, 260, rate=10)
    check = one(run, GOODPUT)
    assert check.passed and check.observed == pytest.approx(40.0)
    run.traffic("send", 140, 260, rate=20)
    check = one(run, GOODPUT)
    assert not check.passed and check.observed == pytest.approx(30.0)


# ---- percentiles -----------------------------------------------------------------------------
# per second: 500 x 1 ms, 400 x 2 ms, 50 x 3 ms, 40 x 4 ms, 9 x 5 ms, 1 x 6 ms
SPREAD = [1.0] * 500 + [2.0] * 400 + [3.0] * 50 + [4.0] * 40 + [5.0] * 9 + [6.0]
EXPECTED_MS = {"p50": 1, "p90": 2, "p95": 3, "p99": 4, "p999": 5}


@pytest.mark.parametrize("name", sorted(EXPECTED_MS))
def test_each_percentile_of_the_merged_histograms(run, name):
    run.traffic("send", 140, 260, rate=1000, latency_ms=SPREAD)
    expected = EXPECTED_MS[name] / 1000
    above = pred(f"{name}(send) <= x", metric(name, "send"), "<=", const(expected + 0.0005, "duration"))
    below = pred(f"{name}(send) <= y", metric(name, "send"), "<=", const(expected - 0.0005, "duration"))
    passing, failing = only(run, above, below)
    assert passing.passed and passing.observed == pytest.approx(expected, rel=2e-3)
    assert not failing.passed and "does not hold" in failing.detail


def test_percentiles_include_errored_requests_at_their_latency(run):
    run.traffic("send", 140, 260, latency_ms=[10_000.0] + [4.0] * 23, errors=1)  # timeouts at peak
    check = one(run, pred("p99(send) <= 1s", metric("p99", "send"), "<=", const(1.0, "duration")))
    assert not check.passed and check.observed == pytest.approx(10.0, rel=2e-3)


def test_percentile_filters_by_phase(run):
    slow = pred("p99(send, phase: peak) <= 10ms", metric("p99", "send", "peak"), "<=", const(0.01, "duration"))
    run.traffic("send", 170, 200, latency_ms=800.0)  # a slow trough: peaks unaffected
    assert one(run, slow).passed
    run.traffic("send", 200, 230, latency_ms=800.0)  # a slow peak
    check = one(run, slow)
    assert not check.passed and check.observed == pytest.approx(0.8, rel=2e-3)


SEND_P99_UNDER_10MS = pred("p99(send) <= 10ms", metric("p99", "send"), "<=", const(0.01, "duration"))


def slow_sends(run: RecordedRun, how_many: int, slow_ms: float = 200.0, fast_ms: float = 4.0) -> int:
    """One slow send in each of the soak's first `how_many` seconds, the others fast; the soak's send count."""
    start, end = int(SOAK[0]), int(SOAK[1])
    for t in range(start, start + how_many):
        per_second = RATES["send"][run.phase_at(t)]
        run.traffic("send", t, t + 1, latency_ms=[slow_ms] + [fast_ms] * (per_second - 1))
    return sum(len(r) for (t, route), r in run.requests.items() if route == "send" and start <= t < end)


def test_a_percentile_a_few_requests_over_its_bound_holds_by_count(run):
    sends = slow_sends(run, 0)
    allowed = allowed_over(sends, 0.01)
    assert allowed > sends - int(0.99 * sends + 0.5)  # room between the two rules
    slow_sends(run, allowed)
    check = one(run, SEND_P99_UNDER_10MS)
    assert check.observed == pytest.approx(0.2, rel=2e-3)  # the percentile itself is over the bound
    assert check.passed
    assert check.detail.startswith("200.1 ms <= 10 ms does not hold by value, but holds by count: "
                                   f"{allowed} of {sends} requests over 10 ms, where a p99 of 10 ms gives at most "
                                   f"{allowed} in 95% of windows of {sends}")


def test_a_percentile_more_requests_over_its_bound_than_chance_allows_fails(run):
    sends = slow_sends(run, 0)
    allowed = allowed_over(sends, 0.01)
    slow_sends(run, allowed + 1)
    check = one(run, SEND_P99_UNDER_10MS)
    assert not check.passed
    assert f": {allowed + 1} of {sends} requests over 10 ms" in check.detail


def test_a_strict_bound_counts_the_requests_at_it(run):
    # 1 ms and 2 ms are exact in the histogram (3 significant digits), so a bound can equal a latency
    run.traffic("send", *SOAK, latency_ms=1.0)
    sends = slow_sends(run, 0)
    slow_sends(run, allowed_over(sends, 0.01) + 1, slow_ms=2.0, fast_ms=1.0)
    under_2ms = pred("p99(send) < 2ms", metric("p99", "send"), "<", const(0.002, "duration"))
    at_most_2ms = pred("p99(send) <= 2ms", metric("p99", "send"), "<=", const(0.002, "duration"))
    strict, loose = only(run, under_2ms, at_most_2ms)
    assert not strict.passed and "requests at or over 2 ms" in strict.detail
    assert loose.passed and "by count" not in loose.detail


def test_a_percentile_bounded_from_below_compares_values(run):
    # a fault's manifestation (`p99 > X`) must show in the percentile itself, not by count
    slow_sends(run, 1)
    check = one(run, pred("p99(send) > 100ms", metric("p99", "send"), ">", const(0.1, "duration")))
    assert not check.passed and "by count" not in check.detail


# ---- baseline references and arithmetic -----------------------------------------------------
P99_VS_BASELINE = pred("p99(send, phase: peak) <= 1.2 * baseline.p99(send, phase: peak)",
                       metric("p99", "send", "peak"), "<=",
                       binop(const(1.2), "*", metric("p99", "send", "peak", baseline=True)))


def test_baseline_scaled_threshold_passes(run):
    check = one(run, P99_VS_BASELINE)  # 4 ms against 1.2 * 6.0 ms from the library baseline
    assert check.passed
    assert check.threshold == pytest.approx(1.2 * 0.006)
    assert check.terms["baseline.p99(send, phase: peak)"] == pytest.approx(0.006)


def test_baseline_scaled_threshold_fails(run):
    run.traffic("send", 140, 260, latency_ms=8.0)
    check = one(run, P99_VS_BASELINE)
    assert not check.passed and check.observed == pytest.approx(0.008, rel=2e-3)


def test_baseline_plus_and_minus(run):
    plus = pred("error_rate <= baseline.error_rate + 1%", metric("error_rate"), "<=",
                binop(metric("error_rate", baseline=True), "+", const(0.01, "fraction")))
    minus = pred("goodput >= baseline.goodput - 1/s", metric("goodput"), ">=",
                 binop(metric("goodput", baseline=True), "-", const(1.0, "rate")))
    assert all(c.passed for c in only(run, plus, minus))
    run.traffic("read", 140, 260, errors=2)  # 240 errors of 4500: 5.3%, 2/s less goodput
    first, second = only(run, plus, minus)
    assert not first.passed and not second.passed
    assert second.threshold == pytest.approx(36.5)


def test_a_missing_baseline_figure_fails_the_predicate(run):
    p90 = pred("p90(send) <= baseline.p90(send)", metric("p90", "send"), "<=", metric("p90", "send", baseline=True))
    check = one(run, p90)
    assert not check.passed and check.threshold is None
    assert "baseline has no p90 figure" in check.detail


def test_a_baseline_route_that_was_not_measured_fails(run):
    del run.baseline["routes"]["send"]
    check = one(run, P99_VS_BASELINE)
    assert not check.passed and "undefined" in check.detail


# ---- backlog and violations --------------------------------------------------------------
BACKLOG = pred("backlog(fanout) == 0", metric("backlog", queue="fanout"), "==", const(0.0))


def test_backlog_is_the_last_sample_of_the_window(run):
    run.backlog["fanout"] = [[t, 50.0 if t < 200 else 0.0] for t, _ in run.backlog["fanout"]]
    check = one(run, BACKLOG)
    assert check.passed and "t=259" in check.detail


def test_backlog_fails_when_the_queue_is_not_drained(run):
    run.backlog["fanout"] = [[t, 0.0 if t < 250 else 7.0] for t, _ in run.backlog["fanout"]]
    check = one(run, BACKLOG)
    assert not check.passed and check.observed == 7.0


def test_backlog_without_samples_is_undefined(run):
    run.backlog = {"inbox": [[150.0, 0.0]]}
    check = one(run, BACKLOG)
    assert not check.passed and "no backlog samples of queue fanout" in check.detail


RUNS = pred("runs(maintenance) >= 2", metric("runs", job="maintenance"), ">=", const(2.0))


def test_runs_counts_the_runs_completed_in_the_window(run):
    check = one(run, RUNS)  # the soak [140, 260) holds the runs completed at 180 and 240
    assert check.passed and check.observed == 2.0
    assert check.detail.endswith("(2 runs completed from the last sample before it to t=259)")


def test_runs_fail_when_the_job_stopped_running(run):
    run.runs["maintenance"] = [[t, min(c, 2)] for t, c in run.runs["maintenance"]]  # nothing after t=120
    check = one(run, RUNS)
    assert not check.passed and check.observed == 0.0


def test_a_restart_of_the_jobs_service_restarts_its_count_and_loses_no_run(run):
    # the service restarted at t=200: its count starts again from 0 and reaches 1 at t=240
    run.runs["maintenance"] = [[t, t // 60 if t < 200 else (1 if t >= 240 else 0)] for t, _ in run.runs["maintenance"]]
    assert one(run, RUNS).observed == 2.0


def test_a_failed_run_in_the_window_is_named_and_one_outside_it_is_not(run):
    # the run due at t=240 failed (the count stays at 3 from t=180); another failed before the soak
    run.runs["maintenance"] = [[t, min(c, 3)] for t, c in run.runs["maintenance"]]
    run.failed_runs = {"maintenance": [{"t": 60.0, "error": "PoolTimeout: early"},
                                       {"t": 240.0, "error": "PoolTimeout: no database connection free"}]}
    check = one(run, RUNS)
    assert not check.passed and check.observed == 1.0
    assert "the run started at t=240 (PoolTimeout: no database connection free)" in check.detail
    assert "early" not in check.detail


def test_runs_without_samples_is_undefined(run):
    run.runs = {}
    check = one(run, RUNS)
    assert not check.passed and "no samples of job maintenance" in check.detail


VIOLATIONS = pred("violations(messages.seq) == 0", metric("violations", sequence="messages.seq"), "==", const(0.0))


def test_violations_read_the_last_snapshot_in_the_window(run):
    # a snapshot taken inside the soak (its own "t" places it) still shows the duplicates
    run.snapshots["declaration"]["t"] = 150.0
    run.snapshots["declaration"]["sequences"]["messages.seq"]["duplicates"] = 12
    check = one(run, VIOLATIONS)
    assert check.passed and "soak_end" in check.detail
    last = pred("violations(messages.seq) == 0 for 100s", VIOLATIONS.left, "==", VIOLATIONS.right, "for", 100.0)
    run.snapshots["soak_end"]["sequences"]["messages.seq"]["duplicates"] = 12
    run.snapshots["declaration"]["sequences"]["messages.seq"]["duplicates"] = 0
    assert not one(run, last).passed


def test_violations_over_the_soak_read_soak_end_taken_just_after_it(run):
    # soak_end is taken once the sleep to the soak's end returned: a moment after the window's end
    run.snapshots["soak_end"]["t"] = run.timeline["soak_end_s"] + 0.05
    check = one(run, VIOLATIONS)
    assert check.passed and "snapshot soak_end" in check.detail
    run.snapshots["soak_end"]["sequences"]["messages.seq"]["duplicates"] = 2
    check = one(run, VIOLATIONS)
    assert not check.passed and check.observed == 2.0


def test_violations_fail_on_duplicates_and_gaps_at_soak_end(run):
    run.snapshots["soak_end"]["sequences"]["messages.seq"].update(duplicates=3, gaps=2)
    check = one(run, VIOLATIONS)
    assert not check.passed and check.observed == 5.0


# ---- windows -------------------------------------------------------------------------------
def test_within_allows_recovery_at_the_start_of_the_soak(run):
    run.traffic("send", 140, 160, errors=10)
    assert not one(run, ERRORS).passed
    within = pred("error_rate(send) <= 1% within 30s", ERRORS.left, "<=", ERRORS.right, "within", 30.0)
    check = one(run, within)
    assert check.passed and (check.window.start_s, check.window.end_s) == (170.0, 260.0)


def test_within_still_fails_on_errors_after_the_allowance(run):
    run.traffic("send", 140, 180, errors=10)
    within = pred("error_rate(send) <= 1% within 30s", ERRORS.left, "<=", ERRORS.right, "within", 30.0)
    assert not one(run, within).passed


def test_backlog_within(run):
    run.backlog["fanout"] = [[t, 30.0 if t < 190 else 0.0] for t, _ in run.backlog["fanout"]]
    drained = pred("backlog(fanout) == 0 within 60s", BACKLOG.left, "==", BACKLOG.right, "within", 60.0)
    assert one(run, drained).passed
    run.backlog["fanout"] = [[t, 30.0] for t, _ in run.backlog["fanout"]]
    assert not one(run, drained).passed


def test_within_longer_than_the_soak_leaves_an_empty_window(run):
    within = pred("error_rate(send) <= 1% within 10m", ERRORS.left, "<=", ERRORS.right, "within", 600.0)
    check = one(run, within)
    assert not check.passed and "empty" in check.detail


def test_for_looks_at_the_last_seconds_only(run):
    run.traffic("send", 140, 200, errors=10)
    last = pred("error_rate(send) <= 1% for 30s", ERRORS.left, "<=", ERRORS.right, "for", 30.0)
    check = one(run, last)
    assert check.passed and (check.window.start_s, check.window.end_s) == (230.0, 260.0)
    run.traffic("send", 240, 250, errors=10)
    assert not one(run, last).passed


# ---- undefined metrics and comparisons ------------------------------------------------------
def test_a_route_without_requests_is_undefined_and_fails(run):
    login = pred("error_rate(login) <= 1%", metric("error_rate", "login"), "<=", const(0.01, "fraction"))
    check = one(run, login)
    assert not check.passed and check.observed is None and "no requests" in check.detail


def test_no_traffic_in_the_soak_is_undefined(run):
    for route in ("send", "read"):
        run.traffic(route, 140, 260, rate=0)
    checks = only(run, ERRORS, GOODPUT, P99_VS_BASELINE)
    assert not any(c.passed for c in checks)
    assert all("undefined" in c.detail for c in checks)


def test_equality_tolerates_float_arithmetic_only():
    assert compare(0.1 + 0.2, "==", 0.3) and not compare(0.1 + 0.2, "!=", 0.3)
    assert compare(0.3, "!=", 0.3001) and not compare(0.3, "==", 0.3001)
    assert compare(1.0, "<", 1.5) and not compare(1.5, "<", 1.5) and compare(2, ">", 1)
