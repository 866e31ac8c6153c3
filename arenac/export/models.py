"""The typed content of what the export writes: task.toml (the part of Harbor's TaskConfig it uses),
the identity file arenac-export.json and the dataset manifest dataset.toml.

Contract: each model is frozen and refuses unknown fields; `to_toml()` / `to_json()` give the
file's exact bytes (keys in a fixed order, no timestamps, no absolute paths of this machine).
Field names and shapes follow Harbor 0.25's schema (`harbor task schema`; its dataset manifest
model for dataset.toml); tests/export/ validates the written task.toml against that schema.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from arenac.core.serialize import dump_json
from arenac.export import toml

HARBOR_SCHEMA_VERSION = "1.4"  # task.toml's, as Harbor 0.25 writes it
IDENTITY_FILE = "arenac-export.json"
IDENTITY_SCHEMA: Final = "arenac.harbor-export/v1"
IDENTITY_DIGEST_KEY = "export_digest"
DATASET_FILE = "dataset.toml"
DATASET_HEADER = "Written by `arenac export harbor`: the Harbor dataset manifest of this export's tasks."


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskInfo(_Frozen):
    name: str  # org/name: arenac/<variant id>
    description: str
    keywords: tuple[str, ...]


class VariantMetadata(_Frozen):
    """[metadata]: what arenac knows of the variant (Harbor keeps it as a free-form table)."""

    arenac_version: str
    arenac_task: str
    arenac_variant: str
    arenac_bundle_digest: str
    title: str
    substrate: str
    fault_layers: tuple[str, ...]
    access_profile: str
    onset_kinds: tuple[str, ...]
    challenges: tuple[str, ...]
    time_scale: float
    agent_window_s: float
    soak_s: float
    difficulty_notes: str
    coordinates: dict[str, str]


class AgentSection(_Frozen):
    user: str
    timeout_sec: float


class VerifierEnvironment(_Frozen):
    cpus: int
    memory_mb: int
    network_mode: Literal["no-network", "public"]


class CollectHook(_Frozen):
    service: str
    command: str
    timeout_sec: float


class VerifierSection(_Frozen):
    environment_mode: Literal["separate"]
    timeout_sec: float
    environment: VerifierEnvironment
    collect: tuple[CollectHook, ...]


class EnvironmentSection(_Frozen):
    network_mode: Literal["public"]
    build_timeout_sec: float
    cpus: int
    memory_mb: int


class Artifact(_Frozen):
    source: str
    service: str


class HarborTask(_Frozen):
    """task.toml."""

    schema_version: str = HARBOR_SCHEMA_VERSION
    task: TaskInfo
    metadata: VariantMetadata
    agent: AgentSection
    verifier: VerifierSection
    environment: EnvironmentSection
    artifacts: tuple[Artifact, ...]

    def to_toml(self, header: str) -> str:
        data = _lists(self.model_dump(mode="json"))
        return toml.dumps(data, header=header)


class ExportedFile(_Frozen):
    path: str
    sha256: str
    mode: str


class ExportIdentity(_Frozen):
    """arenac-export.json: what this task was exported from, and every file it holds (but itself),
    in the shape of a bundle's manifest.json, so that `arenac.bundle.verify_bundle` checks it."""

    schema_version: Literal["arenac.harbor-export/v1"] = IDENTITY_SCHEMA
    arenac_version: str
    task: str
    variant: str
    bundle_digest: str  # the exported bundle's (its manifest.json's)
    time_scale: float
    artefacts: tuple[ExportedFile, ...]
    export_digest: str = ""

    def to_json(self) -> str:
        return dump_json(self.model_dump(mode="json"))


class DatasetInfo(_Frozen):
    name: str
    description: str
    keywords: tuple[str, ...]


class DatasetTask(_Frozen):
    name: str
    digest: str  # sha256:<hex>, Harbor's content hash of the task's files


class DatasetManifest(_Frozen):
    """dataset.toml, as Harbor's `harbor dataset` commands read it."""

    schema_version: str = "1.0"
    dataset: DatasetInfo
    tasks: tuple[DatasetTask, ...]

    def to_toml(self) -> str:
        return toml.dumps(_lists(self.model_dump(mode="json")), header=DATASET_HEADER)


def _lists(value: Any) -> Any:
    """Tuples as lists (the TOML writer's arrays of tables are lists of mappings)."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value
