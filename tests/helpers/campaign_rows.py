"""A campaign's trial row for tests of what is made of rows (the store, the summary): a scored
failure of one agent on pool-budget, with any field changed."""

from __future__ import annotations

from typing import Any

from arenac.model.campaign import TrialRow


def trial_row(agent: str, trial: int, **changes: Any) -> TrialRow:
    fields: dict[str, Any] = dict(
        agent=agent, agent_spec=agent, task="pool-budget", variant="pool-budget-c72d94ce", trial=trial,
        faults={"pool": "runtime"}, access="confined", substrate="spine", status="scored", reward=0, outcome=False,
        safe_repair=True, wall_s=40.0, run_dir=f"runs/{agent}/trial-{trial}")
    fields.update(changes)
    return TrialRow(**fields)
