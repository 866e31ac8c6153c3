"""Releases ("images") of the spine services and the defects they carry.

Contract: a release is chosen once, when a service process starts (the `RELEASE` key is not
reloadable), like the image of a container: changing it means deploying another one (editing the
config file and restarting locally, a new image tag on Kubernetes). Every service accepts every
release; the defects below live in the message service's code paths only. An unknown release
refuses to start, as an image that cannot be pulled would.

Where a process's release comes from:
- on Kubernetes, the image: `bake(version)` (run by the Dockerfile) writes `IMAGE_RELEASE` next to
  this module, and a service that finds it runs that release whatever its environment or config
  file says, so `kubectl set env SPINE_RELEASE=...` cannot swap the code an image runs;
- in the brokered local cluster, the stack's stand-in for the image: a file passed with
  `--image-release-file` (read only when no baked file exists);
- otherwise (the plain local stack), the `RELEASE` key: config file, then `SPINE_RELEASE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spine_services.keys import ConfigError


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


# written into the image at build time (see the Dockerfile); absent in a source checkout
BAKED_RELEASE_FILE = Path(__file__).with_name("IMAGE_RELEASE")


def bake(version: str, path: Path = BAKED_RELEASE_FILE) -> Path:
    """Make `version` the release of this installation (an image build step); refuses an unknown one."""
    release(version)
    path.write_text(version + "\n")
    return path


def image_release(stand_in: Path | None = None, baked: Path = BAKED_RELEASE_FILE) -> str | None:
    """The release the image carries: the baked file, else the `stand_in` file (which must then
    exist), else None (the release comes from the configuration)."""
    for path in (baked, stand_in):
        if path is None:
            continue
        try:
            return release(path.read_text().strip()).version
        except FileNotFoundError:
            if path is stand_in:
                raise ConfigError("RELEASE", f"image release file {path} does not exist") from None
        except OSError as exc:
            raise ConfigError("RELEASE", f"cannot read image release file {path}: {exc}") from None
    return None
