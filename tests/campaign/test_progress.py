"""What a campaign shows while it runs (arenac/campaign/progress.py): plain lines off a terminal, a
live status on one, counts of done / running / left, the pass rate of scored trials only, and a
time-left estimate from the trials run (not the reused ones)."""

from __future__ import annotations

import io

from arenac.campaign.progress import CampaignProgress
from arenac.model.campaign import TrialRow


class _Trial:
    """What the display reads of a planned trial."""

    def __init__(self, label: str) -> None:
        self.label = label


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _row(status="scored", reward=1, wall_s=60.0, reason=None) -> TrialRow:
    return TrialRow(agent="oracle", agent_spec="oracle", task="t", variant="t-1", trial=1, faults={"f": "config"},
                    access="a", substrate="spine", status=status, reward=reward, outcome=bool(reward),
                    safe_repair=bool(reward), reason=reason, wall_s=wall_s, run_dir="runs/x")


def test_plain_lines_off_a_terminal_and_the_figures_they_count():
    stream = io.StringIO()
    trials = [_Trial(f"oracle on t-1 #{n}") for n in range(1, 6)]
    with CampaignProgress(5, 2, stream) as progress:
        progress.done(trials[0], _row(), reused=True)
        for trial in trials[1:4]:
            progress.start(trial)
        progress.done(trials[1], _row(reward=0), reused=False)
        progress.done(trials[2], _row(status="void", reward=0, reason="the fault did not manifest"), reused=False)
        assert progress.status() == "campaign: 3 done, 1 running, 1 to start; 1/2 passed (50%), about 1 min 00 s left"
        progress.done(trials[3], None, reused=False)
    lines = stream.getvalue().splitlines()
    assert lines == ["[1/5] oracle on t-1 #1: scored, reward 1 (reused)",
                     "[2/5] oracle on t-1 #2: scored, reward 0 (60.0 s)",
                     "[3/5] oracle on t-1 #3: void (the fault did not manifest), reward 0 (60.0 s)",
                     "[4/5] oracle on t-1 #4: left (interrupted or not started; rerun to run it)"]
    assert "\x1b" not in stream.getvalue()


def test_on_a_terminal_the_status_is_live_and_the_results_are_printed_above_it():
    stream = _Terminal()
    with CampaignProgress(2, 1, stream) as progress:
        progress.start(_Trial("noop on t-1 #1"))
        progress.done(_Trial("noop on t-1 #1"), _row(reward=0, wall_s=30.0), reused=False)
    text = stream.getvalue()
    assert "[1/2] noop on t-1 #1: scored, reward 0 (30.0 s)\n" in text
    # the live line, redrawn in place with the figures, then cleared (transient)
    assert "\r\x1b[2Kcampaign: 1 done, 0 running, 1 to start; 0/1 passed (0%), about 30 s left" in text


def test_no_scored_trial_no_rate_and_no_estimate_before_a_trial_ran():
    progress = CampaignProgress(3, 1, io.StringIO())
    assert progress.status() == "campaign: 0 done, 0 running, 3 to start; none scored yet"
