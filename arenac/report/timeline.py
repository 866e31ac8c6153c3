"""One trial's timeline, read from its run directory: the client-side SLIs second by second and
the marks of the episode (docs/evidence.md).

Contract:
- `read_timeline(run_dir)` -> `TrialTimeline`, or `TimelineUnreadable` with a one-line reason
  (a run without a ledger, say: a trial that ended before its load started).
- Series: per route, for every ledger second of that route, `errors / count` and the second's p99
  latency, the percentile of its own HdrHistogram as the verifier computes one over a window
  (hdrh's `get_value_at_percentile` semantics: the highest value equivalent to the first count
  index reaching the 99th-percentile count), in seconds.
- Marks: fault onsets and recurrences (events.jsonl `onset`, `recur`), the handover and the
  declaration (evidence/timeline.json), every agent action (actions.jsonl; a line cut short by a
  kill is skipped), the challenges (evidence/challenges.json: restarts and retriggers; absent:
  none), and the soak as a span. All in plan seconds.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path

from hdrh.histogram import HdrHistogram

from arenac.model.evidence import ChallengeRecord, Ledger, LedgerSecond, Timeline
from arenac.report.model import Marker, RouteSeries, Span, TrialTimeline
from arenac.verify.evidence import EvidenceError, read_model

PERCENTILE = 99.0
ACTION_LABEL_CHARS = 160  # an action's argv can be a whole SQL statement: the label keeps its start


class TimelineUnreadable(Exception):
    """The trial's timeline cannot be drawn; the message says why, in one line."""


def read_timeline(run_dir: Path) -> TrialTimeline:
    evidence = run_dir / "evidence"
    if not run_dir.is_dir():
        raise TimelineUnreadable("its run directory is missing")
    for name in ("timeline.json", "ledger.json"):
        if not (evidence / name).is_file():
            raise TimelineUnreadable(f"evidence/{name} is missing")
    try:
        timeline = read_model(evidence / "timeline.json", Timeline, "evidence/timeline.json")
        ledger = read_model(evidence / "ledger.json", Ledger, "evidence/ledger.json")
        challenges = (read_model(evidence / "challenges.json", ChallengeRecord, "evidence/challenges.json")
                      if (evidence / "challenges.json").exists() else ChallengeRecord())
        series = _series(ledger)
    except EvidenceError as error:
        raise TimelineUnreadable(str(error)) from None
    markers = [*_events(run_dir / "events.jsonl"), *_actions(run_dir / "actions.jsonl"),
               *_challenges(challenges)]
    if timeline.handover_s is not None:
        markers.append(Marker(kind="handover", t=timeline.handover_s, label="handover to the agent"))
    if timeline.declared_s is not None:
        markers.append(Marker(kind="declaration", t=timeline.declared_s, label="the agent declared the repair"))
    spans = []
    if timeline.soak_start_s is not None and timeline.soak_end_s is not None:
        spans.append(Span(kind="soak", start_s=timeline.soak_start_s, end_s=timeline.soak_end_s,
                          label=f"soak [{timeline.soak_start_s:g}, {timeline.soak_end_s:g})"))
    markers.sort(key=lambda marker: (marker.t, marker.kind, marker.label))
    ends = [second.t + 1.0 for second in ledger.seconds] + [m.t for m in markers] + [s.end_s for s in spans]
    ends += [window.end_s for window in (challenges.after_restart, challenges.after_retrigger) if window is not None]
    return TrialTimeline(start_s=0.0, end_s=max(ends, default=1.0), series=series, markers=tuple(markers),
                         spans=tuple(spans))


def _series(ledger: Ledger) -> tuple[RouteSeries, ...]:
    by_route: dict[str, list[LedgerSecond]] = {}
    for second in ledger.seconds:
        by_route.setdefault(second.route, []).append(second)
    found = []
    for route in sorted(by_route):
        seconds = sorted(by_route[route], key=lambda s: s.t)
        kept = [s for s in seconds if s.count > 0]
        found.append(RouteSeries(route=route, t=tuple(s.t for s in kept),
                                 error_rate=tuple(s.errors / s.count for s in kept),
                                 p99_s=tuple(_p99(s) / 1e6 for s in kept)))
    return tuple(found)


def _p99(second: LedgerSecond) -> int:
    """The second's p99 in microseconds. hdrh's own `get_value_at_percentile` walks every counter
    from index 0 in Python (about 2 ms a second here, most of a report's time); this walks only
    the counters between the lowest and highest value recorded, with the same result."""
    try:
        histogram = HdrHistogram.decode(second.hist)
    except Exception as error:  # the codec raises a variety of types
        raise EvidenceError(f"evidence/ledger.json: the histogram of route {second.route} at t={second.t} "
                            f"is not an HdrHistogram encoding ({error})") from None
    if histogram.get_total_count() == 0:
        raise EvidenceError(f"evidence/ledger.json: the histogram of route {second.route} at t={second.t} "
                            f"is empty, its count {second.count}")
    low = histogram.get_counts_array_index(histogram.min_value)
    high = histogram.get_counts_array_index(histogram.max_value)
    running = list(accumulate(histogram.counts[low:high + 1]))
    index = low + min(bisect_left(running, histogram.get_target_count_at_percentile(PERCENTILE)), len(running) - 1)
    value: int = histogram.get_highest_equivalent_value(histogram.get_value_from_index(index))
    return value


def _lines(path: Path) -> list[tuple[float, dict[str, object]]]:
    """A JSON-lines file's records with their time; a line cut short (a kill mid-write), not an
    object or without a time is skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("t"), int | float):
            records.append((float(record["t"]), record))
    return records


def _events(path: Path) -> list[Marker]:
    marks = []
    for t, record in _lines(path):
        event, fault = record.get("event"), record.get("fault")
        if event == "onset":
            marks.append(Marker(kind="onset", t=t, label=f"onset of fault {fault}"))
        elif event == "recur":
            marks.append(Marker(kind="recur", t=t, label=f"fault {fault} fired again"))
    return marks


def _actions(path: Path) -> list[Marker]:
    marks = []
    for t, record in _lines(path):
        argv = record.get("argv")
        words = [str(word) for word in argv] if isinstance(argv, list) else []
        text = " ".join([str(record.get("tool", "?")), *words])
        if len(text) > ACTION_LABEL_CHARS:
            text = text[:ACTION_LABEL_CHARS - 1] + "…"
        denied = record.get("allowed") is False
        if denied:
            text += f" (denied: {record.get('reason') or 'no reason given'})"
        marks.append(Marker(kind="action", t=t, label=text, denied=denied))
    return marks


def _challenges(challenges: ChallengeRecord) -> list[Marker]:
    marks = [Marker(kind="challenge", t=r.t, label=f"restart challenge: {r.service}" + ("" if r.ok else " (failed)"))
             for r in challenges.restart]
    marks += [Marker(kind="challenge", t=r.t, label=f"retrigger challenge: {r.fault}" + ("" if r.ok else " (failed)"))
              for r in challenges.retrigger]
    return marks
