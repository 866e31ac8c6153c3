"""Benchmark campaigns: many agents run on many variants, k trials each, and what they show.

A campaign is the benchmark's own experiment: every agent of a campaign file runs every variant it
names, several times (k), and the trials' results are summarised with error bars: who passes,
where (per task, fault layer, access profile, substrate) and why (issue 12).

This package will hold the campaign runner, its results store and the reports built on them. Today
it holds their groundwork, which the later parts call:
- `trials`: `Trial`, one trial's result as the statistics need it (a typed row, never a dict);
- `stats`: pure functions from trials to figures: pass@1 per agent with a task-bootstrap interval,
  Wilson intervals per group, the unbiased pass@k and pass^k estimators, and the breakdowns, each
  figure carrying the void and infra_error trials it excluded (docs/statistics.md).

Like the rest of the harness it never imports the compiler (import-linter's
harness-without-compiler contract): what it knows of a task is what the trials say.
"""
