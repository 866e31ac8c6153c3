"""A service's layered configuration: defaults < config file < environment < run-time changes,
and above them all what the image itself carries.

Contract:
- The config file is the ConfigMap's data: either a YAML/JSON mapping of flat KEY: "value" strings
  (what the local stack writes) or a directory with one file per key (a ConfigMap mounted as a
  volume on Kubernetes). Unknown keys in the file are reported, not fatal (a typo in a ConfigMap is
  silently ignored by real services too); an invalid value is fatal at start (the pod crash-loops).
- The environment overrides the file: `SPINE_<KEY>` (e.g. `SPINE_DB_POOL_SIZE=4`). Wiring keys
  (hosts, ports, secrets) normally come from here.
- Run-time changes (POST /admin/config) override both, only for reloadable keys, and are kept in
  memory only: a restart or a reload (/admin/reload) drops them.
- A reload re-reads the file and the environment. A non-reloadable key whose source changed keeps
  its running value and is reported in `pending_restart` until the process restarts.
- `image`: values baked into the image (the release). They win over every other layer and never
  change while the process runs: an environment variable cannot turn one image into another.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from spine_services.keys import ENV_PREFIX, ConfigError, KeySpec, keys_for

Source = str  # "default" | "file" | "env" | "runtime" | "image"


def read_config_source(path: Path | None) -> dict[str, str]:
    """Read a config file or ConfigMap directory into flat KEY -> string value."""
    if path is None or not path.exists():
        return {}
    if path.is_dir():
        # kubelet keeps the real files behind `..data` symlinks; the visible names are the keys
        return {
            entry.name: entry.read_text().strip()
            for entry in sorted(path.iterdir())
            if not entry.name.startswith(".") and entry.is_file()
        }
    loaded = yaml.safe_load(path.read_text()) or {}
    if not isinstance(loaded, dict):
        raise ConfigError(str(path), "config file must hold a mapping of KEY: value")
    return {str(key): _as_text(value) for key, value in loaded.items()}


def _as_text(value: object) -> str:
    if isinstance(value, bool):  # YAML reads `true`/`on` as booleans; keep the conventional text
        return "true" if value else "false"
    return "" if value is None else str(value)


@dataclass
class ConfigStore:
    """The effective configuration of one service process."""

    service: str
    path: Path | None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    image: Mapping[str, str] = field(default_factory=dict)
    specs: dict[str, KeySpec] = field(init=False)
    _file: dict[str, str] = field(init=False, default_factory=dict)
    _env: dict[str, str] = field(init=False, default_factory=dict)
    _runtime: dict[str, str] = field(init=False, default_factory=dict)
    _running: dict[str, str] = field(init=False, default_factory=dict)
    unknown_in_file: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.specs = keys_for(self.service)
        unknown = sorted(set(self.image) - set(self.specs))
        if unknown:
            raise ConfigError(unknown[0], f"unknown key for service {self.service}")
        self._load_sources()
        self._running = self._resolve()

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str) -> str:
        return self._running[key]

    def get_int(self, key: str) -> int:
        return int(self._running[key])

    def get_float(self, key: str) -> float:
        return float(self._running[key])

    def get_list(self, key: str) -> tuple[str, ...]:
        return tuple(item for item in self._running[key].split(",") if item)

    def effective(self) -> dict[str, str]:
        return dict(sorted(self._running.items()))

    def sources(self) -> dict[str, Source]:
        return {key: self._source_of(key) for key in sorted(self.specs)}

    def pending_restart(self) -> list[str]:
        """Non-reloadable keys whose file/environment value differs from the running one."""
        pending = []
        for key, spec in self.specs.items():
            if spec.reloadable:
                continue
            raw = self.image.get(key, self._env.get(key, self._file.get(key, spec.default)))
            try:
                wanted = spec.check(raw)
            except ConfigError:
                wanted = raw
            if wanted != self._running[key]:
                pending.append(key)
        return sorted(pending)

    # -- changing ----------------------------------------------------------------------------
    def set_runtime(self, changes: Mapping[str, object]) -> set[str]:
        """Apply run-time changes (all or none); returns the keys whose value changed."""
        checked: dict[str, str] = {}
        for key, raw in changes.items():
            spec = self.specs.get(key)
            if spec is None:
                raise ConfigError(key, f"unknown key for service {self.service}")
            if not spec.reloadable:
                raise ConfigError(key, "not reloadable: change the config file and restart")
            checked[key] = spec.check(_as_text(raw))
        self._runtime.update(checked)
        return self._commit(self._resolve())

    def reload(self) -> set[str]:
        """Re-read file and environment, drop run-time changes; returns the changed keys.
        An invalid file leaves everything as it was and raises ConfigError."""
        saved = (self._file, self._env, self._runtime, self.unknown_in_file)
        try:
            self._load_sources()
            self._runtime = {}
            resolved = self._resolve()
        except ConfigError:
            self._file, self._env, self._runtime, self.unknown_in_file = saved
            raise
        for key, spec in self.specs.items():
            if not spec.reloadable:
                resolved[key] = self._running[key]
        return self._commit(resolved)

    # -- internals ---------------------------------------------------------------------------
    def _load_sources(self) -> None:
        raw_file = read_config_source(self.path)
        self.unknown_in_file = sorted(key for key in raw_file if key not in self.specs)
        self._file = {key: value for key, value in raw_file.items() if key in self.specs}
        self._env = {
            key: self.environ[ENV_PREFIX + key] for key in self.specs if ENV_PREFIX + key in self.environ
        }

    def _source_of(self, key: str) -> Source:
        layers = (("image", self.image), ("runtime", self._runtime), ("env", self._env), ("file", self._file))
        for name, layer in layers:
            if key in layer:
                return name
        return "default"

    def _resolve(self) -> dict[str, str]:
        return {
            key: spec.check(
                self.image.get(key, self._runtime.get(key, self._env.get(key, self._file.get(key, spec.default))))
            )
            for key, spec in self.specs.items()
        }

    def _commit(self, resolved: dict[str, str]) -> set[str]:
        changed = {key for key, value in resolved.items() if self._running.get(key) != value}
        self._running = resolved
        return changed
