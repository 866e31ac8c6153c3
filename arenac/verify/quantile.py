"""How many of a window's requests may lie over a latency bound while the bound still holds as the
window's percentile: an upper latency gate judged by count, not by one order statistic.

Why: `p99(send, phase: peak) <= 159ms` over a window of 162 requests (the soak's peaks at time
scale 0.1) is decided by its 160th request, so two sends that one scheduler hiccup held 180 ms fail
a healthy stack as surely as a stall that holds a hundred. A percentile estimated from few requests
is close to their maximum; the question a gate asks is whether the service's latency exceeds the
bound, not whether one request did.

Contract:
- `allowed_over(n, over_share, confidence)`: the most of `n` requests that may lie over a bound B
  while "at most `over_share` of requests exceed B" (B is the 1 - over_share quantile) is still
  plausible: the `confidence` quantile of Binomial(n, over_share), the least a with
  P(X <= a) >= confidence. A window holding more has shown, at that confidence, that its
  percentile exceeds B. It is never less than the count that the window's own percentile would
  allow (the requests hdrh ranks above it, n - int((1 - over_share) * n + 0.5); checked for n up to
  5,000 in tests/verify/test_quantile.py), so judging by count only ever forgives a percentile
  over the bound, never fails one under it.
- Exact: the binomial's probabilities are summed in log space (`math.lgamma`), from 0 up; the
  loop ends by the quantile, a few standard deviations over n * over_share.
- `CONFIDENCE` is the one level the verifier uses (docs/evidence.md, "Metric semantics").
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95


def allowed_over(n: int, over_share: float, confidence: float = CONFIDENCE) -> int:
    """The `confidence` quantile of Binomial(n, over_share)."""
    if n < 0 or not 0.0 <= over_share <= 1.0 or not 0.0 < confidence < 1.0:
        raise ValueError(f"allowed_over: n={n}, over_share={over_share}, confidence={confidence}")
    if over_share == 0.0 or n == 0:
        return 0
    if over_share == 1.0:
        return n
    log_p, log_q = math.log(over_share), math.log1p(-over_share)
    log_n = math.lgamma(n + 1)
    cumulative = 0.0
    for a in range(n + 1):
        cumulative += math.exp(log_n - math.lgamma(a + 1) - math.lgamma(n - a + 1) + a * log_p + (n - a) * log_q)
        if cumulative >= confidence:
            return a
    return n  # rounding left the sum a hair under the confidence: every request may be over
