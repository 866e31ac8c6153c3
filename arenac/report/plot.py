"""A trial's timeline as SVG geometry: two panels over plan seconds (per-route error rate, linear;
per-route p99 latency, logarithmic), the soak as a band, and a vertical mark for every moment of
the episode. The HTML template writes the elements as they come; it computes nothing.

Contract:
- `plot(timeline, title)` -> `SvgPlot`: lists of rectangles, lines, polylines and texts with
  coordinates rounded to 0.1 px, each carrying its CSS classes and a tooltip (`title`).
- Every mark is one element whose class is `marker <kind>` (`marker onset`, `marker recur`,
  `marker handover`, `marker action` (+ `denied`), `marker declaration`, `marker challenge`,
  `marker soak`), so a reader (or a browser test) can find each kind; a route's line has the
  class `route route-<i>` (i: its place among the routes, for its colour).
- Values in the axis labels are in the spec's units (verify/spelled.py): percent, ms / s.
- Deterministic and small: one polyline per route and panel, no font or style inside the SVG
  beyond its classes (the report's one stylesheet styles every plot).

Why drawn here rather than by a plotting library: the plot is two panels of polylines and some
vertical lines, and each mark must be an element of its own with a class (pygal has neither
vertical marks nor per-element classes; matplotlib offers only ids, takes 100+ ms and ~100 kB a
figure, with its text as paths, and a second to import). Here a plot costs about a millisecond and
25 kB, so a report of many trials stays fast and its HTML small.
"""

from __future__ import annotations

import math
from typing import Literal

from arenac.core.units import Dimension
from arenac.model.base import Model
from arenac.report.model import Marker, TrialTimeline
from arenac.verify.spelled import spelled

WIDTH, LEFT, RIGHT = 960.0, 70.0, 16.0
LANE_TOP, LANE_BOTTOM = 6.0, 20.0  # the agent's actions, as ticks
ERRORS_TOP, ERRORS_HEIGHT = 30.0, 110.0
LATENCY_TOP, LATENCY_HEIGHT = 164.0, 130.0
AXIS_LABELS_Y = LATENCY_TOP + LATENCY_HEIGHT + 14.0
LEGEND_Y = AXIS_LABELS_Y + 20.0
HEIGHT = LEGEND_Y + 10.0
ROUTE_COLOURS = 8  # route-0 .. route-7 in the stylesheet
MIN_ERROR_SCALE = 0.01  # the error panel shows at least 0..1%
Anchor = Literal["start", "middle", "end"]


class SvgRect(Model):
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


class SvgLine(Model):
    x1: float
    y1: float
    x2: float
    y2: float
    css: str
    title: str


class SvgPolyline(Model):
    points: str  # "x,y x,y ..."
    css: str
    title: str


class SvgText(Model):
    x: float
    y: float
    text: str
    css: str
    anchor: Anchor


class SvgPlot(Model):
    title: str
    width: float
    height: float
    rects: tuple[SvgRect, ...]  # the soak band, behind everything
    grid: tuple[SvgLine, ...]  # axes and gridlines
    polylines: tuple[SvgPolyline, ...]
    markers: tuple[SvgLine, ...]
    texts: tuple[SvgText, ...]


def _r(value: float) -> float:
    return round(value, 1)


def nice_step(span: float, ticks: int) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about `ticks` intervals over `span`."""
    raw = max(span, 1e-9) / ticks
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def plot(timeline: TrialTimeline, title: str) -> SvgPlot:
    start, end = timeline.start_s, max(timeline.end_s, timeline.start_s + 1.0)
    inner = WIDTH - LEFT - RIGHT

    def x(t: float) -> float:
        return _r(LEFT + (min(max(t, start), end) - start) / (end - start) * inner)

    worst_rate = max((rate for s in timeline.series for rate in s.error_rate), default=0.0)
    rate_top = nice_step(max(worst_rate, MIN_ERROR_SCALE), 1)

    def y_rate(rate: float) -> float:
        return _r(ERRORS_TOP + ERRORS_HEIGHT * (1 - rate / rate_top))

    latencies = [v for s in timeline.series for v in s.p99_s if v > 0]
    low_decade = math.floor(math.log10(min(latencies, default=1e-3)))
    high_decade = max(math.ceil(math.log10(max(latencies, default=1e-1))), low_decade + 1)

    def y_latency(seconds: float) -> float:
        share = (math.log10(max(seconds, 10.0 ** low_decade)) - low_decade) / (high_decade - low_decade)
        return _r(LATENCY_TOP + LATENCY_HEIGHT * (1 - share))

    bottom = LATENCY_TOP + LATENCY_HEIGHT
    rects = [SvgRect(x=x(span.start_s), y=ERRORS_TOP, width=_r(x(span.end_s) - x(span.start_s)),
                     height=bottom - ERRORS_TOP, css=f"marker {span.kind}", title=span.label)
             for span in timeline.spans]
    grid: list[SvgLine] = []
    texts: list[SvgText] = [
        SvgText(x=LEFT, y=ERRORS_TOP - 4, text="error rate per second", css="panel-title", anchor="start"),
        SvgText(x=LEFT, y=LATENCY_TOP - 4, text="p99 latency per second (log scale)", css="panel-title",
                anchor="start"),
    ]
    for rate in (0.0, rate_top / 2, rate_top):
        grid.append(SvgLine(x1=LEFT, y1=y_rate(rate), x2=WIDTH - RIGHT, y2=y_rate(rate), css="grid", title=""))
        texts.append(SvgText(x=LEFT - 6, y=y_rate(rate) + 4, text=spelled(rate, Dimension.fraction), css="tick",
                             anchor="end"))
    for decade in range(low_decade, high_decade + 1):
        y = y_latency(10.0 ** decade)
        grid.append(SvgLine(x1=LEFT, y1=y, x2=WIDTH - RIGHT, y2=y, css="grid", title=""))
        texts.append(SvgText(x=LEFT - 6, y=y + 4, text=spelled(10.0 ** decade, Dimension.duration), css="tick",
                             anchor="end"))
    step = nice_step(end - start, 10)
    tick = math.ceil(start / step) * step
    while tick <= end + 1e-9:
        grid.append(SvgLine(x1=x(tick), y1=ERRORS_TOP, x2=x(tick), y2=bottom, css="grid vertical", title=""))
        texts.append(SvgText(x=x(tick), y=AXIS_LABELS_Y, text=f"{tick:g} s", css="tick", anchor="middle"))
        tick += step
    polylines = []
    for index, series in enumerate(timeline.series):
        css = f"route route-{index % ROUTE_COLOURS}"
        centre = [t + 0.5 for t in series.t]  # a second's value is drawn at its middle
        polylines.append(SvgPolyline(
            points=" ".join(f"{x(t)},{y_rate(v)}" for t, v in zip(centre, series.error_rate, strict=True)),
            css=css, title=f"{series.route}: error rate"))
        polylines.append(SvgPolyline(
            points=" ".join(f"{x(t)},{y_latency(v)}" for t, v in zip(centre, series.p99_s, strict=True)),
            css=css, title=f"{series.route}: p99 latency"))
        legend_x = LEFT + 90.0 * index
        grid.append(SvgLine(x1=legend_x, y1=LEGEND_Y - 4, x2=legend_x + 18, y2=LEGEND_Y - 4, css=css, title=""))
        texts.append(SvgText(x=legend_x + 22, y=LEGEND_Y, text=series.route, css="legend", anchor="start"))
    markers = [_marker(marker, x(marker.t), bottom) for marker in timeline.markers]
    return SvgPlot(title=title, width=WIDTH, height=HEIGHT, rects=tuple(rects), grid=tuple(grid),
                   polylines=tuple(polylines), markers=tuple(markers), texts=tuple(texts))


def _marker(marker: Marker, x: float, bottom: float) -> SvgLine:
    css = f"marker {marker.kind}" + (" denied" if marker.denied else "")
    title = f"{marker.t:g} s: {marker.label}"
    if marker.kind == "action":  # many: ticks in their own lane above the panels
        return SvgLine(x1=x, y1=LANE_TOP, x2=x, y2=LANE_BOTTOM, css=css, title=title)
    return SvgLine(x1=x, y1=LANE_TOP, x2=x, y2=bottom, css=css, title=title)
