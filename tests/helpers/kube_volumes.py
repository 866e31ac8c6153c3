"""What a pod's container sees of a ConfigMap volume, written out on this machine (no kubelet here):

- `project_config_map(config_map, volume, directory)` writes the volume as the kubelet's
  AtomicWriter does (pkg/volume/util/atomic_writer.go): every projected file under a timestamped
  directory `..<timestamp>/` at its item's `path` with its item's `mode` (else the volume's
  `defaultMode`), the link `..data` to that directory, and for each top-level entry a link
  `<entry> -> ..data/<entry>`. Without `items`, every key at the top level. The timestamp is fixed
  (the layout, not the time, is what matters).
- `mount(volume_dir, mounts, root)` puts each of a container's `volumeMounts` of that volume under
  `root` as the container sees it: a mount with `subPath` is the subpath resolved (the kubelet
  evaluates its links, and bind-mounts what they point at: a real directory or file), copied with
  its modes; a mount without one is the volume's directory itself, its `..` entries and links
  included (copied with the links kept).
- `bundle_with(tmp_path, source, extra)` is a copy of the bundle `source` with files added and its
  manifest (and digest) made to list them, opened as the runner opens one: a bundle of any size.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arenac.bundle import MANIFEST, bundle_digest, sha256
from arenac.runner.bundle import RunnableBundle, open_bundle

TIMESTAMP_DIR = "..2030_01_01_00_00_00.000000001"


def project_config_map(config_map: dict[str, Any], volume: dict[str, Any], directory: Path) -> None:
    source = volume["configMap"]
    default_mode = int(source.get("defaultMode", 0o644))
    values: dict[str, bytes] = {key: text.encode("utf-8") for key, text in (config_map.get("data") or {}).items()}
    values |= {key: base64.b64decode(data) for key, data in (config_map.get("binaryData") or {}).items()}
    items = source.get("items") or [{"key": key, "path": key} for key in sorted(values)]
    stamped = directory / TIMESTAMP_DIR
    stamped.mkdir(parents=True)
    for item in items:
        target = stamped / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(values[item["key"]])
        os.chmod(target, int(item.get("mode", default_mode)))
    (directory / "..data").symlink_to(TIMESTAMP_DIR)
    for top in sorted({item["path"].split("/", 1)[0] for item in items}):
        (directory / top).symlink_to(f"..data/{top}")


def mount(volume_dir: Path, mounts: Sequence[dict[str, Any]], root: Path) -> None:
    for entry in mounts:
        target = root / entry["mountPath"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        sub = entry.get("subPath")
        if sub is None:
            shutil.copytree(volume_dir, target, symlinks=True)
            continue
        resolved = (volume_dir / sub).resolve()
        assert resolved.is_relative_to(volume_dir.resolve()), f"subPath {sub} leaves the volume"
        if resolved.is_dir():
            shutil.copytree(resolved, target)
        else:
            shutil.copy2(resolved, target)


def bundle_with(tmp_path: Path, source: Path, extra: dict[str, bytes]) -> RunnableBundle:
    """A copy of `source` with files added and its manifest (and digest) made to list them."""
    copy = tmp_path / "bundle"
    shutil.copytree(source, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    for path, data in extra.items():
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_bytes(data)
        manifest["artefacts"].append({"mode": "0644", "path": path, "sha256": sha256(data)})
    manifest["artefacts"].sort(key=lambda a: a["path"])
    manifest.pop("bundle_digest")
    manifest["bundle_digest"] = bundle_digest(manifest)
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return open_bundle(copy)
