"""Metrics over windows of plan seconds, from the evidence (docs/evidence.md, "Metric semantics").

Contract:
- A window is half-open, [a, b) in plan seconds. A ledger second belongs to it when its
  start `t` does (a <= t < b); a backlog sample likewise; a snapshot when its time lies in
  [a, b] (snapshots are taken at window ends: soak_end at the soak's end).
- error_rate = errors / count; pNN = the percentile of the merged HDR histograms, in
  seconds (p999 is the 99.9th; histograms that do not hold exactly `count` latencies are
  a broken ledger, EvidenceError); `over(metric, window, bound_s, strict)` counts the window's
  requests over a bound (at or over it when `strict`), by the same histogram's highest equivalent
  values, so a percentile at most the bound leaves at most the requests ranked above it over it
  (the count an upper latency gate is judged by: arenac/verify/quantile.py);
  backlog(q) = the last sample in the window;
  runs(job) = the runs the job completed between the last sample before the window (else its
  first sample in it) and its last sample in it, a count that restarted with its service (a drop)
  adding its new value; the runs that failed and started in the window are named in its note;
  violations(seq) = duplicates + gaps of the last snapshot in the window, less one gap for every row
  of the sequence's table the client asked to delete before that snapshot (a deleted message's seq is
  a legitimate hole: arenac/verify/acked.py, `client_deletions`). soak_end and the challenges'
  snapshots, taken a moment after the window they close, are placed at its end (evidence.py
  `closing_mark`), so the soak's own violations read soak_end.
- goodput = good requests per second and throughput = requests per second, per *real*
  second: the load generator scales phase durations by the time scale but not rates
  (arenac.substrate.spine.profile), so the window's plan seconds are multiplied by the
  ledger's time_scale (at time scale 1 this is exactly (count - errors) / (b - a)). With a
  phase filter the seconds are those of the window spent in phases of that name, which is
  how the baseline measures per-phase goodput.
- A metric over a window with no requests (or no samples, or no snapshot) is undefined:
  `Measured.value` is None and `note` says why. Baseline figures come from baseline.json
  (route and phase default to "all"; milliseconds become seconds); a missing figure is
  undefined too.
- baseline.json must be the calibration of the task's own load profile (`profile`, from the
  gates' `baseline`, "SUBSTRATE/PROFILE"): a baseline figure read from a record that names
  another profile, or with no baseline.json at all (the profile was never calibrated), raises
  EvidenceError with the reason, never a verdict on another profile's figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from hdrh.histogram import HdrHistogram

from arenac.model.baseline import Baseline
from arenac.model.evidence import SNAPSHOT_LABELS, LedgerSecond
from arenac.model.gates import Metric
from arenac.model.verdict import Window
from arenac.verify.acked import client_deletions
from arenac.verify.evidence import Evidence, EvidenceError

# a merged histogram's filter and window: (route, phase, start_s, end_s)
_HistogramKey = tuple[str | None, str | None, float, float]
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
HIST_LOWEST_US, HIST_HIGHEST_US, HIST_DIGITS = 1, 60_000_000, 3
_BASELINE_FIELDS = {"error_rate": ("error_rate", 1.0), "goodput": ("goodput_rps", 1.0),
                    "p50": ("p50_ms", 0.001), "p95": ("p95_ms", 0.001), "p99": ("p99_ms", 0.001)}


@dataclass(frozen=True)
class Measured:
    value: float | None  # None: undefined
    note: str  # how it was measured, or why it is undefined


def metric_text(metric: Metric) -> str:
    """Canonical spelling: `p99(send, phase: peak)`, `baseline.goodput`, `backlog(fanout)`."""
    args = [a for a in (metric.route, metric.queue, metric.sequence, metric.job) if a]
    if metric.phase:
        args.append(f"phase: {metric.phase}")
    call = metric.name + (f"({', '.join(args)})" if args else "")
    return ("baseline." if metric.baseline else "") + call


def fmt(value: float) -> str:
    return f"{value:.6g}"


class Measurer:
    """Evaluates metrics over windows; merged histograms are cached per (filter, window)."""

    def __init__(self, evidence: Evidence, profile: str | None = None) -> None:
        self.evidence = evidence
        self.profile = profile  # the task's load profile, "spine.standard" (None: not checked)
        self._hists: dict[_HistogramKey, HdrHistogram] = {}

    def measure(self, metric: Metric, window: Window) -> Measured:
        if metric.baseline:
            return self._baseline(metric)
        if metric.name == "backlog":
            return self._backlog(metric.queue or "", window)
        if metric.name == "violations":
            return self._violations(metric.sequence or "", window)
        if metric.name == "runs":
            return self._runs(metric.job or "", window)
        return self._requests(metric, window)

    # ---- the ledger ------------------------------------------------------------------
    def _seconds(self, metric: Metric, window: Window) -> list[LedgerSecond]:
        return [s for s in self.evidence.ledger.seconds
                if window.start_s <= s.t < window.end_s
                and (metric.route is None or s.route == metric.route)
                and (metric.phase is None or s.phase == metric.phase)]

    def _requests(self, metric: Metric, window: Window) -> Measured:
        seconds = self._seconds(metric, window)
        count = sum(s.count for s in seconds)
        errors = sum(s.errors for s in seconds)
        scope = _scope(metric)
        if count == 0:
            return Measured(None, f"undefined: no requests{scope} in the window")
        if metric.name == "error_rate":
            return Measured(errors / count, f"{errors} errors / {count} requests{scope}")
        if metric.name in ("goodput", "throughput"):
            real_s = self._window_seconds(metric, window) * self.evidence.ledger.time_scale
            if real_s <= 0:
                return Measured(None, f"undefined: the window has no time{scope}")
            numerator = count - errors if metric.name == "goodput" else count
            what = "good requests" if metric.name == "goodput" else "requests"
            return Measured(numerator / real_s, f"{numerator} {what}{scope} / {fmt(real_s)} s")
        histogram = self._histogram(metric, window, seconds)
        if histogram.get_total_count() != count:
            raise EvidenceError(f"evidence/ledger.json: the histograms{scope} over {window} hold "
                                f"{histogram.get_total_count()} latencies, the counts {count} requests")
        value_us = histogram.get_value_at_percentile(PERCENTILES[metric.name])
        return Measured(value_us / 1e6, f"over {count} requests{scope}")

    def over(self, metric: Metric, window: Window, bound_s: float, strict: bool = False) -> tuple[int, int]:
        """(requests over `bound_s`, requests) of the metric's route and phase in the window; at or
        over it when `strict` (the bound of a `<` gate)."""
        seconds = self._seconds(metric, window)
        histogram = self._histogram(metric, window, seconds)
        bound_us = bound_s * 1e6
        over = sum(item.count_at_value_iterated_to for item in histogram.get_recorded_iterator()
                   if item.value_iterated_to > bound_us or (strict and item.value_iterated_to >= bound_us))
        return over, histogram.get_total_count()

    def _window_seconds(self, metric: Metric, window: Window) -> float:
        if metric.phase is None:
            return window.end_s - window.start_s
        return sum(max(0.0, min(window.end_s, p.end_s) - max(window.start_s, p.start_s))
                   for p in self.evidence.ledger.phases if p.name == metric.phase)

    def _histogram(self, metric: Metric, window: Window, seconds: list[LedgerSecond]) -> HdrHistogram:
        key: _HistogramKey = (metric.route, metric.phase, window.start_s, window.end_s)
        if key not in self._hists:
            merged = HdrHistogram(HIST_LOWEST_US, HIST_HIGHEST_US, HIST_DIGITS)
            for second in seconds:
                try:
                    merged.decode_and_add(second.hist)
                except Exception as error:  # the codec raises a variety of types
                    raise EvidenceError(f"evidence/ledger.json: the histogram of route {second.route} at "
                                        f"t={fmt(second.t)} is not an HdrHistogram encoding ({error})") from None
            self._hists[key] = merged
        return self._hists[key]

    # ---- backlog and snapshots -------------------------------------------------------
    def _backlog(self, queue: str, window: Window) -> Measured:
        samples = [s for s in self.evidence.backlog.queues.get(queue, ())
                   if window.start_s <= s[0] < window.end_s]
        if not samples:
            return Measured(None, f"undefined: no backlog samples of queue {queue} in the window")
        t, value = max(samples, key=lambda s: s[0])
        return Measured(value, f"last sample at t={fmt(t)}")

    def _runs(self, job: str, window: Window) -> Measured:
        samples = self.evidence.runs.jobs.get(job, ())
        inside = [s for s in samples if window.start_s <= s[0] < window.end_s]
        if not inside:
            return Measured(None, f"undefined: no samples of job {job} in the window")
        before = [s for s in samples if s[0] < window.start_s]
        counts = [c for _, c in [*before[-1:], *inside]]
        # the count restarts at 0 with its service: a drop is a restart, after which the new count is all new
        completed = sum(b - a if b >= a else b for a, b in pairwise(counts))
        since = "the last sample before it" if before else f"the first sample in it (t={fmt(inside[0][0])})"
        note = f"{completed} runs completed from {since} to t={fmt(inside[-1][0])}"
        failed = [run for run in self.evidence.runs.failed.get(job, ()) if window.start_s <= run.t < window.end_s]
        if failed:  # why the window holds fewer runs than the schedule promised
            note += "; failed: " + "; ".join(f"the run started at t={fmt(run.t)} ({run.error})" for run in failed)
        return Measured(float(completed), note)

    def _violations(self, sequence: str, window: Window) -> Measured:
        placed = []
        for label in SNAPSHOT_LABELS:
            snapshot = self.evidence.snapshot(label, required=False)
            if snapshot is None:
                continue
            taken = self.evidence.snapshot_time(label, snapshot)
            # soak_end is taken just after the soak's end, and belongs to the soak (evidence.py)
            mark = self.evidence.closing_mark(label)
            at = mark if mark is not None else taken
            if at is not None and window.start_s <= at <= window.end_s:
                placed.append((at, taken if taken is not None else at, label, snapshot))
        if not placed:
            return Measured(None, "undefined: no snapshot in the window")
        _, taken, label, snapshot = max(placed, key=lambda p: p[0])
        state = snapshot.sequences.get(sequence)
        if state is None:
            return Measured(None, f"undefined: snapshot {label} has no sequence {sequence}")
        # the client's deletions up to the moment the snapshot's reads ended
        read_until = self.evidence.snapshot_read_until(label, snapshot)
        deleted = len(client_deletions(self.evidence, sequence.split(".")[0],
                                       read_until if read_until is not None else taken))
        gaps = max(0, state.gaps - deleted)
        excuse = f" beyond the {deleted} the client's deletions explain" if deleted else ""
        return Measured(float(state.duplicates + gaps),
                        f"{state.duplicates} duplicates + {gaps} gaps{excuse} in snapshot {label} (t={fmt(taken)})")

    # ---- the healthy baseline --------------------------------------------------------
    def _baseline(self, metric: Metric) -> Measured:
        route, phase = metric.route or "all", metric.phase or "all"
        field, scale = _BASELINE_FIELDS.get(metric.name, (None, 1.0))
        figures = self._calibration().routes.get(route, {}).get(phase)
        value: float | None = getattr(figures, field) if figures is not None and field is not None else None
        if value is None:
            return Measured(None, f"undefined: the baseline has no {metric.name} figure for route {route}, "
                                  f"phase {phase}")
        return Measured(value * scale, f"baseline route {route}, phase {phase}")


    def _calibration(self) -> Baseline:
        """evidence/baseline.json, checked to be the calibration of the task's own load profile."""
        if self.profile is not None and not (self.evidence.directory / "baseline.json").exists():
            raise EvidenceError(f"evidence/baseline.json: missing: load profile {self.profile} has no calibrated "
                                "baseline, and a gate reads a baseline figure (arenac calibrate --profile "
                                f"{self.profile.split('.', 1)[-1]})")
        baseline = self.evidence.baseline
        if self.profile is not None and baseline.profile_name != self.profile:
            raise EvidenceError(f"evidence/baseline.json: the calibration of load profile "
                                f"{baseline.profile_name or '(unnamed)'}, not of the task's {self.profile}")
        return baseline


def baseline_profile(gates_baseline: str | None) -> str | None:
    """The task's load profile as a baseline record names it (`spine.standard`) from the gates'
    `baseline` ("spine/standard"); None for gates that do not say (compiled before they did)."""
    return gates_baseline.replace("/", ".", 1) if gates_baseline else None


def _scope(metric: Metric) -> str:
    parts = []
    if metric.route:
        parts.append(f"route {metric.route}")
    if metric.phase:
        parts.append(f"phase {metric.phase}")
    return f" ({', '.join(parts)})" if parts else ""
