"""Benchmark campaigns: many agents run on many variants, k trials each, and what they show.

A campaign is the benchmark's own experiment: every agent of a campaign file runs every variant it
names, several times (k), and the trials' results are summarised with error bars: who passes,
where (per task, fault layer, access profile, substrate) and why (issue 12).

Modules (one job each; the reports built on them are still to come):
- `spec_file`: a campaign file (TOML or YAML) read into its model, every mistake at its line;
- `run`: the trials planned and run, k per agent and variant, resumable, with the retry policy
  for infrastructure errors; `store`: the results database (SQLite), one row per trial;
  `progress`: what a campaign shows while it runs;
- `trials`: `Trial`, one trial's result as the statistics need it (a typed row, never a dict);
- `stats`: pure functions from trials to figures: pass@1 per agent with a task-bootstrap interval,
  Wilson intervals per group, the unbiased pass@k and pass^k estimators, and the breakdowns, each
  figure carrying the void and infra_error trials it excluded (docs/statistics.md).

Like the rest of the harness it never imports the compiler (import-linter's
harness-without-compiler contract): what it knows of a task is what the trials say.
"""
