"""A trial's timeline from its evidence: each second's p99 is hdrh's own percentile of that
second's histogram, each second's error rate its errors over its count, and every mark of the
episode is there at its plan time; the plot gives each mark an element of its own class."""

from __future__ import annotations

import json
import re

import pytest
from hdrh.histogram import HdrHistogram

from arenac.report.plot import plot
from arenac.report.timeline import TimelineUnreadable, read_timeline
from helpers.report_runs import ACTIONS, ONSET_T, RECUR_T, graded_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("timeline") / "run"
    graded_run(directory, "fail")
    return directory


def test_each_seconds_figures_are_the_ledgers(run_dir):
    ledger = json.loads((run_dir / "evidence" / "ledger.json").read_text())
    timeline = read_timeline(run_dir)
    assert [s.route for s in timeline.series] == sorted({s["route"] for s in ledger["seconds"]})
    for series in timeline.series:
        seconds = sorted((s for s in ledger["seconds"] if s["route"] == series.route), key=lambda s: s["t"])
        assert series.t == tuple(s["t"] for s in seconds)
        assert series.error_rate == tuple(s["errors"] / s["count"] for s in seconds)
        assert series.p99_s == tuple(HdrHistogram.decode(s["hist"]).get_value_at_percentile(99) / 1e6
                                     for s in seconds)


def test_the_p99_shortcut_agrees_with_hdrh_on_spread_latencies(tmp_path):
    from arenac.model.evidence import LedgerSecond
    from arenac.report.timeline import _p99

    for latencies in ([5], [1, 2, 3], list(range(1, 2000, 7)), [3_000, 612_000, 10_000_000] * 40):
        histogram = HdrHistogram(1, 60_000_000, 3)
        for value in latencies:
            histogram.record_value(value)
        second = LedgerSecond(t=0, phase="peak", route="send", count=len(latencies), errors=0,
                              hist=histogram.encode().decode())
        assert _p99(second) == histogram.get_value_at_percentile(99), latencies


def test_every_mark_of_the_episode_is_there(run_dir):
    timeline = read_timeline(run_dir)
    record = json.loads((run_dir / "evidence" / "timeline.json").read_text())
    challenges = json.loads((run_dir / "evidence" / "challenges.json").read_text())
    times = {kind: sorted(m.t for m in timeline.markers if m.kind == kind)
             for kind in ("onset", "recur", "handover", "action", "declaration", "challenge")}
    assert times["onset"] == [ONSET_T] and times["recur"] == [RECUR_T]
    assert times["handover"] == [record["handover_s"]] and times["declaration"] == [record["declared_s"]]
    assert times["action"] == sorted(a["t"] for a in ACTIONS)  # the line cut short is left out
    assert times["challenge"] == sorted(c["t"] for c in challenges["restart"] + challenges["retrigger"])
    assert [m.denied for m in timeline.markers if m.kind == "action"] == [not a["allowed"] for a in ACTIONS]
    (soak,) = timeline.spans
    assert (soak.start_s, soak.end_s) == (record["soak_start_s"], record["soak_end_s"])


def test_the_plot_gives_every_mark_its_element_and_stays_in_its_frame(run_dir):
    timeline = read_timeline(run_dir)
    drawn = plot(timeline, "t")
    for marker in timeline.markers:
        assert any(f"marker {marker.kind}" in m.css and m.title.endswith(marker.label) for m in drawn.markers)
    assert [r.css for r in drawn.rects] == ["marker soak"]
    assert len(drawn.polylines) == 2 * len(timeline.series)
    for line in drawn.polylines:
        for x, y in (map(float, point.split(",")) for point in line.points.split()):
            assert 0 <= x <= drawn.width and 0 <= y <= drawn.height
    # the axes in the spec's units, reaching the worst second of each panel
    ticks = [t.text for t in drawn.texts if t.css == "tick"]
    rates = [float(text.removesuffix("%")) / 100 for text in ticks if text.endswith("%")]
    latencies = [float(text.removesuffix(" ms")) / 1000 for text in ticks if text.endswith(" ms")]
    assert max(rates) >= max(v for s in timeline.series for v in s.error_rate) > 0
    assert max(latencies) >= max(v for s in timeline.series for v in s.p99_s)
    assert plot(timeline, "t") == drawn


@pytest.mark.parametrize("missing", ["ledger.json", "timeline.json"])
def test_a_run_without_its_ledger_or_timeline_has_no_timeline(tmp_path, missing):
    graded_run(tmp_path / "run")
    (tmp_path / "run" / "evidence" / missing).unlink()
    with pytest.raises(TimelineUnreadable, match=re.escape(f"evidence/{missing} is missing")):
        read_timeline(tmp_path / "run")


def test_a_broken_histogram_is_named(tmp_path):
    graded_run(tmp_path / "run")
    path = tmp_path / "run" / "evidence" / "ledger.json"
    ledger = json.loads(path.read_text())
    ledger["seconds"][3]["hist"] = "bm90IGEgaGlzdG9ncmFt"
    path.write_text(json.dumps(ledger))
    with pytest.raises(TimelineUnreadable, match="is not an HdrHistogram encoding"):
        read_timeline(tmp_path / "run")
