"""The report's tables, prepared from the statistics (arenac/campaign/stats.py) for every writer:
rows of text cells in their final order, so that the HTML template and the terminal only lay
them out.

Contract:
- `leaderboard(summary, ks)`: per agent (sorted), its scored trials and passes, pass@1 with its
  task-bootstrap interval, pass@k and pass^k for each k in `ks` ("-" where undefined: a task with
  fewer than k scored trials), the trials excluded (void, infra_error), its scored trials that
  made a full fix and the pass rate among them with its Wilson 95% interval (`given_full_fix`;
  "-" when it made none). Rates are whole percents, as `arenac campaign` prints them.
- `breakdown_table(summary, dimension)`: per task, fault layer or access profile (rows, sorted) and
  agent (columns): passes / scored, the pass rate and its Wilson 95% interval; "no scored
  trials" where every trial of the group was excluded; "-" where the agent ran none.
- `class_table(counts, agents)`: per failure class (every class of the taxonomy, in its order) and
  agent, the scored failures of that class (a failure may have several classes); then, when
  there are any, the scored failures whose evidence the taxonomy could not read, on a row of
  their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from arenac.campaign.stats import AgentEstimate, CampaignSummary, Dimension, GroupFigures, Interval
from arenac.model.campaign import CLASSES
from arenac.report.model import UNCLASSIFIED, Cell, ClassCount, Table

UNCLASSIFIED_TEXT = "not classified (evidence unreadable)"
TITLES: dict[Dimension, str] = {"task": "task", "layer": "fault layer", "access": "access profile",
                                "agent": "agent", "substrate": "substrate"}


def _percent(value: float) -> str:
    return f"{value:.0%}"


def _interval(interval: Interval | None) -> str:
    return f"{_percent(interval.low)}–{_percent(interval.high)}" if interval is not None else "-"


def _estimate(estimate: AgentEstimate) -> tuple[Cell, Cell]:
    if estimate.value is None:
        return Cell(text="-", css="none"), Cell(text="-", css="none")
    return Cell(text=_percent(estimate.value), css="number"), Cell(text=_interval(estimate.interval), css="number")


def leaderboard(summary: CampaignSummary, ks: Sequence[int]) -> Table:
    header = ["agent", "scored", "passed", "pass@1", "95% CI (tasks)"]
    for k in ks:
        header += [f"pass@{k}", f"pass^{k}"]
    header += ["void", "infra_error", "full fix", "pass given full fix"]
    rows = []
    for agent in summary.agents:
        pooled = next(group for group in summary.leaderboard.groups if group.key == agent.agent)
        fixed = next(group for group in summary.given_full_fix.groups if group.key == agent.agent)
        cells = [Cell(text=agent.agent), Cell(text=str(pooled.scored), css="number"),
                 Cell(text=str(pooled.passes), css="number"), *_estimate(agent.pass_at_1)]
        for k in ks:
            for estimator in ("pass@k", "pass^k"):
                found = next(e for e in agent.estimates if e.k == k and e.estimator == estimator)
                cells.append(Cell(text=_percent(found.value), css="number") if found.value is not None
                             else Cell(text="-", css="none"))
        cells += [Cell(text=str(pooled.excluded.void), css="number excluded" if pooled.excluded.void else "number"),
                  Cell(text=str(pooled.excluded.infra_error),
                       css="number excluded" if pooled.excluded.infra_error else "number"),
                  Cell(text=str(fixed.scored), css="number"),
                  Cell(text=f"{_percent(fixed.pass_rate)} [{_interval(fixed.wilson)}]", css="number")
                  if fixed.pass_rate is not None else Cell(text="-", css="none")]
        rows.append(tuple(cells))
    caption = ("pass@1: the mean over tasks of the per-task pass rate, with a task-bootstrap 95% interval; "
               "void and infra_error trials are excluded and counted (docs/statistics.md); full fix: the scored "
               "trials whose agent changed every target of the oracle's repair, and the pass rate among them with "
               "its Wilson 95% interval (docs/campaign.md)")
    return Table(id="leaderboard", title="Leaderboard", caption=caption, header=tuple(header), rows=tuple(rows))


def _group_cell(group: GroupFigures | None) -> Cell:
    if group is None:
        return Cell(text="-", css="none")
    excluded = f" ({group.excluded.total} excluded)" if group.excluded.total else ""
    if group.pass_rate is None:
        return Cell(text=f"no scored trials{excluded}", css="excluded")
    css = "pass" if group.passes == group.scored else ("fail" if group.passes == 0 else "")
    return Cell(text=f"{group.passes}/{group.scored} {_percent(group.pass_rate)} [{_interval(group.wilson)}]"
                     f"{excluded}", css=css)


def breakdown_table(summary: CampaignSummary, dimension: Dimension) -> Table:
    agents = [agent.agent for agent in summary.agents]
    groups: dict[str, dict[str, GroupFigures]] = {}
    for agent in summary.agents:
        found = next(b for b in agent.breakdowns if b.dimension == dimension)
        for group in found.groups:
            groups.setdefault(group.key, {})[agent.agent] = group
    rows = tuple((Cell(text=key), *(_group_cell(groups[key].get(agent)) for agent in agents))
                 for key in sorted(groups))
    title = TITLES[dimension]
    caption = (f"per {title}: passes / scored trials, the pass rate and its Wilson 95% interval"
               + (" (a trial counts once in each distinct layer of its faults)" if dimension == "layer" else ""))
    return Table(id=f"by-{dimension}", title=f"Per {title}", caption=caption, header=(title, *agents), rows=rows)


def class_table(counts: Sequence[ClassCount], agents: Sequence[str]) -> Table:
    caption = ("scored failures per failure class (arenac/campaign/taxonomy.py); a failure may fall in "
               "several classes")
    by_key: dict[tuple[str, str], int] = {(count.failure_class, count.agent): count.count for count in counts}
    names: list[str] = [*CLASSES, *([UNCLASSIFIED] if any(c.failure_class == UNCLASSIFIED for c in counts) else [])]
    rows = tuple((Cell(text=UNCLASSIFIED_TEXT if name == UNCLASSIFIED else name),
                  *(Cell(text=str(by_key.get((name, agent), 0)),
                         css="number fail" if by_key.get((name, agent)) else "number") for agent in agents))
                 for name in names)
    return Table(id="by-class", title="Per failure class", caption=caption, header=("failure class", *agents),
                 rows=rows)
