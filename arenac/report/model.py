"""The report's typed model: what `collect` reads from a run or campaign directory and every writer
(HTML, JUnit XML, results.json, CSV, the terminal summary) renders. No writer reads a file itself.

Contract:
- `ReportTrial` is one trial: who ran what (agent, task, variant, trial of k), how it ended
  (status, reward, outcome, safe repair, the reason of a trial not scored), its gate checks in the
  spec's units as the verifier wrote them (`ReportCheck`, sub-checks flattened after their parent
  with `depth` + 1), its failure classes and full fix (arenac/campaign/taxonomy.py; or why the
  taxonomy could not read its evidence), and its timeline (`TrialTimeline`) when it is plotted,
  or the note saying why it is not.
- `TrialTimeline` is in plan seconds and base units (fractions, seconds): per route and second
  the error rate and the p99 latency (None: no request that second), and the marks of the
  episode: fault onsets and recurrences, the handover, every agent action, the declaration, the
  challenges, and the soak as a span. The plot (report/plot.py) turns it into geometry.
- `Report` holds the trials sorted by (agent, task, variant, trial), the statistics' summary
  (arenac/campaign/stats.py, unchanged), the tables prepared from it, and the per-class counts
  (`UNCLASSIFIED`: the scored failures whose evidence the taxonomy could not read, counted apart).
  Nothing in it is a time of day or an absolute path: the same directory gives the same report.
"""

from __future__ import annotations

from typing import Final, Literal

from arenac.campaign.stats import CampaignSummary
from arenac.model.base import Model
from arenac.model.campaign import FailureClass
from arenac.model.evidence import TrialStatus

SCHEMA_VERSION: Final = "arenac.report/v2"
UNCLASSIFIED: Final = "unclassified"
MarkerKind = Literal["onset", "recur", "handover", "action", "declaration", "challenge"]


class ReportCheck(Model):
    """One gate check of a trial's verdict, its detail in the spec's units (the verifier's text)."""

    gate: Literal["outcome", "safety"]
    text: str
    passed: bool
    detail: str
    window: str | None = None  # "soak [140, 260)"; None when the check has no window
    depth: int = 0  # 0: a check of the gate; 1 and more: re-evaluated predicates under their parent


class Marker(Model):
    """A moment of the episode, in plan seconds, with a line of text saying what happened."""

    kind: MarkerKind
    t: float
    label: str
    denied: bool = False  # an agent action the broker refused


class Span(Model):
    kind: Literal["soak"]
    start_s: float
    end_s: float
    label: str


class RouteSeries(Model):
    """One route's client-side SLIs, second by second (the ledger's seconds of that route)."""

    route: str
    t: tuple[int, ...]
    error_rate: tuple[float, ...]  # errors / count, 0..1
    p99_s: tuple[float, ...]  # the p99 latency of that second, seconds


class TrialTimeline(Model):
    start_s: float
    end_s: float
    series: tuple[RouteSeries, ...]  # sorted by route
    markers: tuple[Marker, ...]  # sorted by time
    spans: tuple[Span, ...]


class ReportTrial(Model):
    agent: str
    agent_spec: str
    task: str
    variant: str
    trial: int
    faults: dict[str, str]  # fault name -> layer ("unknown" where the run does not say)
    access: str
    substrate: str
    status: TrialStatus
    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool
    reason: str | None
    wall_s: float | None
    attempts: int
    run_dir: str  # relative to the directory the report was made from ("." for a run directory)
    checks: tuple[ReportCheck, ...]
    classes: tuple[FailureClass, ...]  # in the taxonomy's order; () for a pass or an excluded trial
    full_fix: bool | None  # the agent changed every held target of the oracle's repair; None: not said
    taxonomy_problem: str | None  # why the taxonomy could not read the trial's evidence
    timeline: TrialTimeline | None = None
    note: str | None = None  # why there is no timeline, when there is none

    @property
    def key(self) -> str:
        """`agent.task.variant`: the JUnit classname, and what the tables call a trial."""
        return f"{self.agent}.{self.task}.{self.variant}"

    @property
    def anchor(self) -> str:
        """An HTML id for the trial's section."""
        return f"trial-{self.agent}-{self.variant}-{self.trial}"

    @property
    def scored(self) -> bool:
        return self.status in ("scored", "failed")

    @property
    def scored_failure(self) -> bool:
        return self.status == "failed" or (self.status == "scored" and self.reward == 0)

    @property
    def unclassified(self) -> bool:
        """A scored failure whose evidence the taxonomy could not read: counted apart, not class-less."""
        return self.scored_failure and self.taxonomy_problem is not None

    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.faults.values())))


class Cell(Model):
    text: str
    css: str = ""  # a class of the stylesheet: pass, fail, excluded, none, number


class Table(Model):
    """A table ready to print or render: a header and rows of cells, in their final order."""

    id: str
    title: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


class ClassCount(Model):
    """How many scored failures of one agent fall in one failure class (or are `UNCLASSIFIED`)."""

    failure_class: FailureClass | Literal["unclassified"]
    agent: str
    count: int


class Report(Model):
    schema_version: Literal["arenac.report/v2"] = SCHEMA_VERSION
    source: Literal["run", "campaign"]
    name: str  # the directory's name, for titles
    trials: tuple[ReportTrial, ...]  # sorted by (agent, task, variant, trial)
    summary: CampaignSummary
    ks: tuple[int, ...]  # the k of the pass@k and pass^k figures (none when every trial ran once)
    class_counts: tuple[ClassCount, ...]
    leaderboard: Table
    breakdowns: tuple[Table, ...]  # per task, fault layer, access profile
    class_table: Table
    plotted: int  # trials with a timeline
    plot_limit: int
