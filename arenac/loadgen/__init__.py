"""arenac.loadgen: the open-loop load generator and its client-side ledger, the outcome gate's evidence.

- `plan`: a LoadProfile on the episode clock (plan seconds = real seconds / time scale; durations
  scale, rates per real second do not; optional anchoring of cycles to Unix time).
- `routes`: how each substrate's routes are issued (`PlainClient`; a substrate's own client comes
  from its driver, arenac/substrate/interface.py).
- `ledger`: per (plan second, route) counts, errors and HDR histograms (docs/evidence.md) and the
  live view `current(window_s) -> (error_rate, p99_s)`.
- `generator`: `run_load(...)`, the asyncio + aiohttp open-loop driver; `python -m arenac.loadgen`
  runs it as its own process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arenac.loadgen.generator import CLIENT_TIMEOUT_S, RunSummary, run_load
    from arenac.loadgen.ledger import Ledger, Live, LiveView, decode_histogram, load_ledger
    from arenac.loadgen.plan import Plan, PlanPhase, make_plan
    from arenac.loadgen.routes import PlainClient, RouteClient, SetupError, route_client

# Each name from its module on first use (PEP 562): a reader of ledgers (the verifier, `arenac
# report`) then never imports the generator's asyncio + aiohttp stack, which costs a third of a
# second at process start.
_HOME = {
    "CLIENT_TIMEOUT_S": "generator", "RunSummary": "generator", "run_load": "generator",
    "Ledger": "ledger", "Live": "ledger", "LiveView": "ledger", "decode_histogram": "ledger",
    "load_ledger": "ledger",
    "Plan": "plan", "PlanPhase": "plan", "make_plan": "plan",
    "PlainClient": "routes", "RouteClient": "routes", "SetupError": "routes", "route_client": "routes",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"arenac.loadgen.{_HOME[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CLIENT_TIMEOUT_S",
    "Ledger",
    "Live",
    "LiveView",
    "PlainClient",
    "Plan",
    "PlanPhase",
    "RouteClient",
    "RunSummary",
    "SetupError",
    "decode_histogram",
    "load_ledger",
    "make_plan",
    "route_client",
    "run_load",
]
