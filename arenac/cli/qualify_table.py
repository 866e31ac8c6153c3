"""What `arenac qualify` prints: a line per finished episode (under one not as required and scored,
its failing checks in the spec's units, so a healthy or oracle run that failed says why), then the
qualification table, a line per control run not scored with its reason (and, when void, what to
move), per strategy met for want of a door, per overloaded attempt run again, and the totals (from
the `QualificationReport`, arenac/model/report.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from arenac.model.report import AdversariesReport, QualificationReport


def progress_line(run) -> None:
    """`  ok  VARIANT CONTROL#N: STATUS, reward R, TOOK` as each episode ends (BAD: not as required)."""
    mark = "ok " if run.satisfied else "BAD"
    took = f"reused ({run.result.wall_s:.1f} s when it ran)" if run.reused else f"{run.result.wall_s:.1f} s"
    print(f"  {mark} {run.bundle.plan.variant} {run.control}#{run.index + 1}: {run.result.status}, "
          f"reward {run.result.reward}, {took}", flush=True)
    if not run.satisfied and run.result.status == "scored":
        from arenac.verify.verdict import recorded_failing_lines

        for line in recorded_failing_lines(run.result.out):
            print(f"    {line}", flush=True)


def print_table(report: QualificationReport) -> None:
    """A row per variant (each control's runs, the suite's cell, qualified or not), then the totals."""
    adversarial = report.adversary_k is not None
    table = Table(title=f"qualification (k={report.k}, time scale {report.time_scale:g}"
                  + (f", adversaries k={report.adversary_k})" if adversarial else ")"))
    for column in ("variant", "cell", "healthy", "noop", "oracle") + (("adversaries",) if adversarial else ()) \
            + ("qualified",):
        table.add_column(column)
    for variant in report.variants:
        cells = []
        for control in ("healthy", "noop", "oracle"):
            runs = variant.controls[control].runs
            cells.append(("ok " if variant.controls[control].ok else "NO ")
                         + " ".join(f"{r.reward}" if r.status == "scored" else r.status for r in runs))
        if variant.adversaries is not None:
            cells.append(adversary_cell(variant.adversaries))
        cell = ", ".join(f"{k}={v}" for k, v in variant.coordinates.items())
        table.add_row(variant.variant, cell, *cells, "yes" if variant.ok else "NO")
    Console(width=200 if adversarial else 160).print(table)
    for line in unscored_lines(report) + no_door_lines(report) + retried_lines(report):
        print(line)
    episodes = report.episodes
    unscored = episodes.void + episodes.infra_error
    print(f"episodes: {episodes.total} ({episodes.scored} scored, {episodes.failed} failed, "
          f"{episodes.void} void, {episodes.infra_error} infra_error: {unscored / max(1, episodes.total):.0%} "
          f"not scored) in {report.wall_s:.0f} s, {report.jobs} side by side"
          + (f", {report.reused} reused from an earlier run" if report.reused else "")
          + (f"; {report.retried} overloaded attempts run again" if report.retried else ""))
    print(f"ok: {report.ok}")


def unscored_lines(report: QualificationReport) -> list[str]:
    """`void  VARIANT noop#1: REASON` for each control run not scored (void, infra_error), with
    `  move: ADVICE` under a void one: which fault did not show and what to change."""
    lines = []
    for variant in report.variants:
        for control, summary in variant.controls.items():
            if summary.shared_from is not None:
                continue  # listed under the variant whose runs they are
            for index, run in enumerate(summary.runs):
                if run.status in ("void", "infra_error"):
                    reason = run.reason or "no reason recorded"
                    lines.append(f"{run.status}  {variant.variant} {control}#{index + 1}: {reason}")
                    if run.advice:
                        lines.append(f"  move: {run.advice}")
    return lines


def no_door_lines(report: QualificationReport) -> list[str]:
    """`no door  VARIANT STRATEGY#1: REASON` for each must-fail strategy run met only because its
    attack could not be tried on the variant's surface."""
    return [f"no door  {variant.variant} {name}#{index + 1}: {run.no_door}"
            for variant in report.variants if variant.adversaries is not None
            for name, strategy in variant.adversaries.strategies.items()
            for index, run in enumerate(strategy.runs) if run.no_door is not None]


def retried_lines(report: QualificationReport) -> list[str]:
    """`retried  VARIANT CONTROL#1: REASON (set aside: DIR)` for each attempt whose harness was
    overloaded and which ran again (runner/retry.py)."""
    lines = []
    for variant in report.variants:
        groups = [(name, c.runs) for name, c in variant.controls.items() if c.shared_from is None]
        if variant.adversaries is not None:
            groups += [(name, s.runs) for name, s in variant.adversaries.strategies.items()]
        lines += [f"retried  {variant.variant} {name}#{index + 1}: {attempt.reason} (set aside: {attempt.run_dir})"
                  for name, runs in groups for index, run in enumerate(runs) for attempt in run.earlier or ()]
    return lines


def adversary_cell(summary: AdversariesReport) -> str:
    """`adv 13/14; PASSED: a, b; fix-now failed; not scored: c; no door: d` (met/total, then what went
    wrong, then the strategies met only because their attack could not be tried here)."""
    parts = [f"adv {summary.met}/{summary.total}"]
    if summary.passing:
        parts.append("PASSED: " + ", ".join(summary.passing))
    parts += [f"{name} failed" for name in summary.failed_controls]
    if summary.unscored:
        parts.append("not scored: " + ", ".join(summary.unscored))
    if summary.no_door:
        parts.append("no door: " + ", ".join(summary.no_door))
    return "; ".join(parts)
