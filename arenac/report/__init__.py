"""Reports (`arenac report RUN_DIR|CAMPAIGN_DIR`, docs/report.md): what a run or a campaign showed,
for people (an HTML page, a terminal summary), for CI (JUnit XML) and for their own analysis
(results.json, trials.csv).

Modules (one job each):
- `model`: the report's typed model, what every writer renders;
- `collect`: a run directory or a campaign directory -> `Report` (the trials, their checks in the
  spec's units, their failure classes and full fix (arenac/campaign/taxonomy.py), their
  timelines, the statistics of arenac/campaign/stats.py and the tables);
- `timeline`: one trial's client-side SLIs per second and the episode's marks, from its evidence;
- `tables`: the leaderboard and the per-task, per-layer, per-access and per-class tables;
- `plot`: a timeline as SVG geometry; `html` (with templates/report.html.j2), `junit`, `results`
  (results.json and trials.csv) and `terminal`: the writers; `write`: all the files at once.

Like the rest of the harness it never imports the compiler (import-linter).
"""
