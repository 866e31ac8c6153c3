"""One episode clock: plan seconds, compressed by the time scale into real seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


def monotonic_of_unix(unix_t: float) -> float:
    """The `time.monotonic()` reading of Unix time `unix_t` (a clock zero another process wrote)."""
    return time.monotonic() - (time.time() - unix_t)


@dataclass
class EpisodeClock:
    time_scale: float
    zero: float = field(default_factory=time.monotonic)

    def now(self) -> float:
        """Plan seconds since the clock's zero."""
        return (time.monotonic() - self.zero) / self.time_scale

    def real(self, plan_seconds: float) -> float:
        return plan_seconds * self.time_scale

    def plan(self, real_seconds: float) -> float:
        return real_seconds / self.time_scale

    def sleep_until(self, plan_t: float, stop=None) -> bool:
        """Sleep until plan time `plan_t`; False when `stop` (an Event) was set first."""
        while True:
            remaining = (plan_t - self.now()) * self.time_scale
            if remaining <= 0:
                return True
            if stop is not None and stop.wait(min(remaining, 0.2)):
                return False
            if stop is None:
                time.sleep(min(remaining, 0.2))
