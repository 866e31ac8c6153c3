"""The cohort's qualification as the Markdown tables of docs/cohort.md.

    .venv/bin/arenac qualify tasks/ -k 3 --time-scale 0.1 --jobs 3 --out qualification
    .venv/bin/python bench/cohort.py qualification/qualification.json

Prints one row per variant (its cell, each control's rewards over its k runs, the mean wall time
of its episodes) and the totals: variants, episodes (a healthy run shared by several variants
counts once), how many met their expectation, wall time. A report of `qualify --adversarial` adds
an adversaries column (`adv met/total`, then any must-fail strategy that passed, a failed fix-now
control, strategies not scored) and, per variant, a table of every strategy's result.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

CONTROLS = ("healthy", "noop", "oracle")


def cell_text(control: dict) -> str:
    runs = control["runs"]
    shown = " ".join("v" if r["status"] == "void" else "!" if r["status"] != "scored" else str(r["reward"])
                     for r in runs)
    return ("ok " if control["ok"] else "NO ") + shown


def adversary_text(summary: dict) -> str:
    from arenac.cli.qualify_table import adversary_cell  # the qualify table's own cell
    from arenac.model.report import AdversariesReport

    return adversary_cell(AdversariesReport.model_validate(summary))


def run_text(run: dict) -> str:
    return "v" if run["status"] == "void" else "!" if run["status"] != "scored" else str(run["reward"])


def main(path: str) -> None:
    report = json.loads(Path(path).read_text())
    adversarial = "adversary_k" in report
    extra = " adversaries |" if adversarial else ""
    print(f"| task | variant | cell | healthy (pass) | no-op (fail) | oracle (pass) |{extra} "
          "qualified | mean episode |")
    print("| --- | --- | --- | --- | --- | --- |" + (" --- |" if adversarial else "") + " --- | --- |")
    walls, outcomes = [], {}  # run_dir -> met its expectation (a shared healthy run counts once)
    for variant in report["variants"]:
        controls = variant["controls"]
        cell = ", ".join(f"{k}={v}" for k, v in variant["coordinates"].items() if k != "access")
        cell += f", access={variant['coordinates']['access']}"
        mine = [r["wall_s"] for name in CONTROLS for r in controls[name]["runs"]]
        strategies = variant.get("adversaries", {}).get("strategies", {})
        for strategy in strategies.values():
            for r in strategy["runs"]:
                walls.append(r["wall_s"])
                mine.append(r["wall_s"])
                outcomes[r["run_dir"]] = r["met"]
        for name in CONTROLS:
            expect_pass = controls[name]["expected"] == "pass"
            for r in controls[name]["runs"]:
                if r["run_dir"] not in outcomes:
                    walls.append(r["wall_s"])
                outcomes[r["run_dir"]] = r["status"] == "scored" and (r["reward"] == 1) == expect_pass
        print(f"| {variant['task']} | `{variant['variant']}` | {cell} | "
              + " | ".join(cell_text(controls[name]) for name in CONTROLS)
              + (f" | {adversary_text(variant['adversaries'])}" if adversarial else "")
              + f" | {'yes' if variant['ok'] else 'NO'} | {statistics.mean(mine):.1f} s |")
    qualified = sum(1 for v in report["variants"] if v["ok"])
    print()
    met = sum(outcomes.values())
    print(f"{qualified}/{len(report['variants'])} variants qualified; "
          f"{met}/{len(outcomes)} episodes met their expectation; "
          f"k={report['k']}, time scale {report['time_scale']}, jobs {report.get('jobs', '?')}, "
          f"wall {report.get('wall_s', '?')} s; episode wall mean {statistics.mean(walls):.1f} s, "
          f"max {max(walls):.1f} s")
    if adversarial:
        print()
        print(f"Adversaries (each run {report['adversary_k']} time(s) per variant; reward per run, `v` void, `!` "
              "infrastructure error):")
        print()
        names = list(report["variants"][0]["adversaries"]["strategies"]) if report["variants"] else []
        print("| variant | " + " | ".join(names) + " |")
        print("| --- |" + " --- |" * len(names))
        for variant in report["variants"]:
            strategies = variant["adversaries"]["strategies"]
            cells = [("ok " if strategies[n]["ok"] else "NO ") + " ".join(run_text(r) for r in strategies[n]["runs"])
                     + f" (must {strategies[n]['expected']})" * (strategies[n]["expected"] == "pass")
                     for n in names]
            print(f"| `{variant['variant']}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "qualification/qualification.json")
