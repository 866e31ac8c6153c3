"""Releases ("images") of the spine services and the defects they carry.

Contract: a release is chosen once, when a service process starts (the `RELEASE` key is not
reloadable), like the image of a container: changing it means deploying another one (editing the
config file and restarting locally, a new image tag on Kubernetes). Every service accepts every
release; the defects below live in the message service's code paths only. An unknown release
refuses to start, as an image that cannot be pulled would.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenac.substrate.spine.keys import ConfigError


@dataclass(frozen=True)
class Release:
    version: str
    healthy: bool
    # 1.5.0: the sequencer reads the channel's last seq and writes it back in two statements
    # whatever SEQUENCER_MODE says, so concurrent sends get the same number.
    sequencer_always_rmw: bool = False
    # 1.5.1: after a send whose seq is a multiple of this, an "activity audit" opens its own
    # session, locks the channel's sequencer row and never commits (idle in transaction).
    leak_every_nth_seq: int = 0
    notes: str = ""


RELEASES: dict[str, Release] = {
    release.version: release
    for release in (
        Release("1.4.2", True, notes="healthy (the default)"),
        Release("1.4.3", True, notes="healthy; a later patch of the 1.4 line"),
        Release("1.5.0", False, sequencer_always_rmw=True,
                notes="sequencer defect: read-modify-write regardless of SEQUENCER_MODE (duplicate seqs)"),
        Release("1.5.1", False, leak_every_nth_seq=20,
                notes="leaks a transaction that holds the channel's sequencer row lock (sends block)"),
    )
}


def release(version: str) -> Release:
    try:
        return RELEASES[version]
    except KeyError:
        raise ConfigError("RELEASE", f"no such release {version!r}; known: {', '.join(RELEASES)}") from None
