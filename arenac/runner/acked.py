"""What became of the acknowledged writes, recorded at soak end (docs/evidence.md, `acked_soak_end.json`)
and after the restart challenge (`acked_after_restart.json`).

The load generator (evidence/acks.jsonl) and the harness's send bursts (evidence/harness_acks.jsonl)
record every write they were told succeeded (and the load generator every deletion of its own
writes it asked for, which the verifier takes as legitimately gone: the record is the same). At
soak end, after the agent was frozen and before the restart challenge, the runner records the
state the verifier needs to judge them
(arenac/verify/acked.py), so that the verifier stays a pure function of the evidence; at the end of
the restart challenge's re-check it records the same again (a queue protected `at after_restart`):

- `messages`: the rows written after the baseline, as id -> the digest their writer computed from
  what it sent (`after_id`: the baseline's maximum id; the rows up to it are covered by the
  baseline checksum);
- `fanout`: where each fan-out event is (parked, queued, delivered to an inbox).
Which tables, queues and inboxes hold them is the substrate's to say: its driver reads both with
the harness's hands (`SubstrateDriver.acked_messages`, `fanout_state`; spine's:
arenac/substrate/spine/harness.py).
- A part that cannot be read (a datastore refused) is {"error": "..."}; the checks that need it
  then fail: what cannot be seen at soak end cannot be shown to be intact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from arenac.model.evidence import AckedSoakEnd, FanoutAtSoakEnd, MessagesAtSoakEnd, PartUnreadable
from arenac.runner.harness_io import HarnessIO


def record_acked_state(io: HarnessIO, t: float, baseline_max_ids: dict[str, int] | None) -> AckedSoakEnd:
    driver, baseline = io.substrate, baseline_max_ids or {}
    return AckedSoakEnd(t=round(t, 3), messages=_guarded(lambda: driver.acked_messages(io, baseline)),
                        fanout=_guarded(lambda: driver.fanout_state(io)))


Part = TypeVar("Part", MessagesAtSoakEnd, FanoutAtSoakEnd)


def _guarded(part: Callable[[], Part]) -> Part | PartUnreadable:
    try:
        return part()
    except Exception as error:  # recorded: the checks that need this part fail
        return PartUnreadable(error=f"{type(error).__name__}: {error}")
