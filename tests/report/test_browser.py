"""The HTML report in a real browser (headless Chromium, Debian's `chromium`; CI installs it): the
page loads without a console error, every trial's plot is drawn (an SVG with a size, its route
lines with a length), every kind of mark is there and laid out, and a screenshot is saved under
the test's temporary directory. One browser for the whole test; a page that throws is seen, so
the absence of errors means something."""

from __future__ import annotations

import pytest

from arenac.report.collect import collect
from arenac.report.model import Marker
from arenac.report.write import write_report
from helpers.chromium import chromium, open_page

pytestmark = pytest.mark.skipif(chromium() is None, reason="no chromium on PATH (CI installs Debian's chromium: "
                                                           ".ci/run)")
KINDS = sorted(set(Marker.model_fields["kind"].annotation.__args__) | {"soak"})

MARKS = """
Object.fromEntries(%s.map(kind => [kind, [...document.querySelectorAll(`svg.timeline .marker.${kind}`)]
    .filter(e => { const box = e.getBBox(); return box.height > 0 || box.width > 0; }).length]))
"""
PLOTS = """
[...document.querySelectorAll('svg.timeline')].map(svg => ({
  width: svg.getBoundingClientRect().width,
  drawn: [...svg.querySelectorAll('polyline.route')].filter(l => l.getTotalLength() > 0).length,
  lines: svg.querySelectorAll('polyline.route').length}))
"""


def test_the_report_renders_in_chromium(campaign, tmp_path):
    directory, rows = campaign
    report = collect(directory)
    write_report(report, tmp_path / "report")
    page_url = (tmp_path / "report" / "report.html").as_uri()
    with open_page(page_url, tmp_path / "profile") as page:
        assert page.problems == []
        plots = page.evaluate(PLOTS)
        assert len(plots) == report.plotted == len(rows)
        assert all(p["width"] > 0 and p["lines"] > 0 and p["drawn"] == p["lines"] for p in plots), plots
        counts = page.evaluate(MARKS % KINDS)
        expected = {kind: sum(1 for t in report.trials for m in t.timeline.markers if m.kind == kind)
                    for kind in KINDS if kind != "soak"}
        expected["soak"] = sum(len(t.timeline.spans) for t in report.trials)
        assert counts == expected and all(counts.values()), counts
        shot = page.screenshot()
        assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 10_000
        (tmp_path / "report.png").write_bytes(shot)
        # the other side: a page that throws is caught, so an empty list above is a real answer
        (tmp_path / "broken.html").write_text("<!DOCTYPE html><script>console.error('seen'); undefinedCall()</script>")
        page.navigate((tmp_path / "broken.html").as_uri())
        assert any("seen" in p for p in page.problems) and any("uncaught" in p for p in page.problems)
