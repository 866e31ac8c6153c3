"""The HTML report: one self-contained file (its stylesheet inline, its plots inline SVG, no script,
nothing fetched), readable offline.

Contract:
- `render_html(report)` -> the page's text; `write_html(report, path)` writes it.
- The template (templates/report.html.j2) is logic-free: it loops over the lists prepared here
  (`Page`: the tables, the trial index, each trial's facts, plot, notes, checks and events) and
  writes their values, autoescaped; jinja2 runs with StrictUndefined, so a name the template asks
  for and the page lacks is an error, never an empty string.
- Sections: the leaderboard with its intervals, the tables per task, fault layer, access profile
  and failure class, the index of trials, then every trial: its facts (with its failure classes,
  or why the taxonomy could not say them, and its full fix: yes, no or not said), its timeline plot
  (report/plot.py) or the note saying why there is none, its checks (verdict details in the spec's
  units, as the verifier wrote them) and the list of its marks.
- Deterministic: the same report gives the same bytes (no time of day, no absolute path).
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from arenac.core.serialize import write_atomic
from arenac.model.base import Model
from arenac.report.model import MarkerKind, Report, ReportCheck, ReportTrial, Table
from arenac.report.plot import SvgPlot, plot
from arenac.report.tables import UNCLASSIFIED_TEXT

TEMPLATE = "report.html.j2"
KEY: tuple[tuple[MarkerKind | str, str], ...] = (
    ("onset", "fault onset"), ("recur", "fault fired again"), ("handover", "handover"),
    ("action", "agent action (red: denied)"), ("declaration", "declaration"), ("challenge", "challenge"),
    ("soak", "soak"))


class Fact(Model):
    label: str
    value: str


class CheckRow(Model):
    gate: str
    text: str
    mark: str
    css: str
    detail: str
    window: str
    depth: int


class EventRow(Model):
    t: str
    kind: str
    label: str


class EventList(Model):
    summary: str
    rows: tuple[EventRow, ...]


class TrialView(Model):
    anchor: str
    heading: str
    status: str
    css: str
    facts: tuple[Fact, ...]
    plots: tuple[SvgPlot, ...]  # one, or none
    notes: tuple[str, ...]
    check_tables: tuple[tuple[CheckRow, ...], ...]  # one, or none when the trial has no checks
    event_lists: tuple[EventList, ...]  # one, or none


class IndexRow(Model):
    anchor: str
    name: str
    status: str
    css: str
    reward: int
    failing: int
    classes: str


class KeyItem(Model):
    css: str
    text: str


class Page(Model):
    title: str
    subtitle: tuple[str, ...]
    tables: tuple[Table, ...]
    trials_caption: str
    index: tuple[IndexRow, ...]
    key: tuple[KeyItem, ...]
    trials: tuple[TrialView, ...]


def status_css(trial: ReportTrial) -> str:
    if trial.status == "scored" and trial.reward == 1:
        return "pass"
    return "fail" if trial.scored else "excluded"


def status_text(trial: ReportTrial) -> str:
    if trial.status == "scored":
        return "pass" if trial.reward == 1 else "fail"
    return trial.status


def full_fix_text(full_fix: bool | None) -> str:
    if full_fix is None:
        return "not said"
    return "yes: the agent changed every target of the oracle's repair" if full_fix else \
        "no: the agent left a target of the oracle's repair unchanged"


def _check_row(check: ReportCheck) -> CheckRow:
    return CheckRow(gate=check.gate, text=check.text, mark="PASS" if check.passed else "FAIL",
                    css="pass" if check.passed else "fail", detail=check.detail, window=check.window or "",
                    depth=min(check.depth, 3))


def _trial_view(trial: ReportTrial) -> TrialView:
    facts = [Fact(label="agent", value=trial.agent if trial.agent == trial.agent_spec
                  else f"{trial.agent} ({trial.agent_spec})"),
             Fact(label="task", value=trial.task), Fact(label="variant", value=trial.variant),
             Fact(label="faults", value=", ".join(f"{name} ({layer})" for name, layer in trial.faults.items()) or "-"),
             Fact(label="access", value=trial.access), Fact(label="substrate", value=trial.substrate),
             Fact(label="reward", value=f"{trial.reward} (outcome {'held' if trial.outcome else 'failed'}, safe repair "
                                        f"{'yes' if trial.safe_repair else 'no'})")]
    if trial.reason:
        facts.append(Fact(label="reason", value=trial.reason))
    if trial.classes:
        facts.append(Fact(label="failure classes", value=", ".join(trial.classes)))
    if trial.taxonomy_problem is not None:
        facts.append(Fact(label="failure classes", value=f"{UNCLASSIFIED_TEXT}: {trial.taxonomy_problem}"))
    facts.append(Fact(label="full fix", value=full_fix_text(trial.full_fix)))
    if trial.attempts > 1:
        facts.append(Fact(label="attempts", value=f"{trial.attempts} (the earlier ones ended in an infra_error)"))
    if trial.wall_s is not None:
        facts.append(Fact(label="wall time", value=f"{trial.wall_s:.1f} s"))
    facts.append(Fact(label="run directory", value=trial.run_dir))
    heading = f"{trial.agent} on {trial.variant} #{trial.trial}"
    plots = (plot(trial.timeline, f"{heading}: client-side SLIs and the episode's marks"),) if trial.timeline else ()
    events: tuple[EventList, ...] = ()
    if trial.timeline is not None:
        rows = tuple(EventRow(t=f"{m.t:.1f}", kind=m.kind + (" (denied)" if m.denied else ""), label=m.label)
                     for m in trial.timeline.markers)
        events = (EventList(summary=f"the episode's marks ({len(rows)})", rows=rows),)
    checks = tuple(_check_row(check) for check in trial.checks)
    notes = [trial.note] if trial.note else []
    if not checks:
        notes.append("no gate checks: the trial was not graded" + (f" ({trial.reason})" if trial.reason else ""))
    return TrialView(anchor=trial.anchor, heading=heading, status=status_text(trial), css=status_css(trial),
                     facts=tuple(facts), plots=plots, notes=tuple(notes), check_tables=(checks,) if checks else (),
                     event_lists=events)


def page(report: Report) -> Page:
    trials = report.trials
    counts = {status: sum(1 for t in trials if status_text(t) == status)
              for status in ("pass", "fail", "failed", "void", "infra_error")}
    subtitle = (f"{len(trials)} trial(s) of {len(report.summary.agents)} agent(s) on "
                f"{len({t.variant for t in trials})} variant(s): "
                + ", ".join(f"{n} {status}" for status, n in counts.items() if n),)
    caption = (f"{report.plotted} of {len(trials)} trial(s) plotted"
               + (f" (at most {report.plot_limit}, those that did not pass first)" if report.plotted < len(trials)
                  else ""))
    index = tuple(IndexRow(anchor=t.anchor, name=f"{t.agent} on {t.variant} #{t.trial}", status=status_text(t),
                           css=status_css(t), reward=t.reward,
                           failing=sum(1 for c in t.checks if not c.passed and c.depth == 0),
                           classes=UNCLASSIFIED_TEXT if t.unclassified else ", ".join(t.classes))
                  for t in trials)
    title = f"arenac report: {report.source} {report.name}"
    return Page(title=title, subtitle=subtitle,
                tables=(report.leaderboard, *report.breakdowns, report.class_table), trials_caption=caption,
                index=index, key=tuple(KeyItem(css=css, text=text) for css, text in KEY),
                trials=tuple(_trial_view(t) for t in trials))


def render_html(report: Report) -> str:
    environment = jinja2.Environment(loader=jinja2.PackageLoader("arenac.report", "templates"),
                                     undefined=jinja2.StrictUndefined, autoescape=True, keep_trailing_newline=True)
    return environment.get_template(TEMPLATE).render(page=page(report))


def write_html(report: Report, path: Path) -> None:
    write_atomic(path, render_html(report))
