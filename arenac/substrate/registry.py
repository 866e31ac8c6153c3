"""Which driver runs each substrate: the one place a substrate's name becomes its code.

Contract: `driver_for(name)` returns the `SubstrateDriver` (arenac/substrate/interface.py) of the
substrate a plan names, importing its module only then (a driver pulls in the runner's packages;
`arenac check` never gets here); an unknown name raises `UnknownSubstrate`, naming the known ones.
`substrate_names()` lists them. A second substrate is one more entry here, `name: "module:ATTRIBUTE"`
(and its descriptor, chart, faults and profiles under library/substrates/<name>/): the runner,
the broker and the load generator reach it through the interface alone. The descriptor
(substrate.yaml) does not name its driver because the descriptor's bytes are an input of every
bundle's manifest: naming the driver there would change every bundle's identity.
"""

from __future__ import annotations

import importlib
from typing import cast

from arenac.substrate.interface import SubstrateDriver

DRIVERS: dict[str, str] = {
    "spine": "arenac.substrate.spine.driver:DRIVER",
}


class UnknownSubstrate(LookupError):
    """A substrate name no driver is registered for."""


def substrate_names() -> tuple[str, ...]:
    return tuple(sorted(DRIVERS))


def driver_for(name: str) -> SubstrateDriver:
    try:
        module, _, attribute = DRIVERS[name].partition(":")
    except KeyError:
        raise UnknownSubstrate(f"no driver for substrate {name!r} (known: {', '.join(substrate_names())})") from None
    return cast(SubstrateDriver, getattr(importlib.import_module(module), attribute))
