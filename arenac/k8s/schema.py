"""Validate Kubernetes objects against the API schemas of the versions we support.

Contract of `validate_objects(objects, versions)`:

- Each object is checked with kubernetes-validate in strict mode (a field the API
  does not define is an error) against each Kubernetes version in `versions`
  ("1.30" or "v1.30"; a patch part is ignored). The default is the oldest version we
  support and `LATEST`.
- `LATEST` is the newest Kubernetes minor version ("1.37") whose strict schemas the
  installed kubernetes-validate ships, read from the package's data, not hard-coded.
- The result is a list of `SchemaProblem`, empty when every object is valid for every
  version; sorted by kind, name, version, message. At most one problem per object and
  version: the schema error jsonschema ranks best.
- An object whose apiVersion/kind has no schema in a version (a custom resource, a
  removed or misspelt API) is a problem too: nothing unchecked passes silently. So is
  an object that is not a mapping with string apiVersion and kind.
- A version that kubernetes-validate does not ship raises ValueError before anything
  is checked.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LATEST", "SchemaProblem", "shipped_versions", "validate_objects"]

_SCHEMA_DIR = "kubernetes-json-schema"
_STRICT_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")


@dataclass(frozen=True)
class SchemaProblem:
    kind: str
    name: str
    version: str
    message: str


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def shipped_versions() -> tuple[str, ...]:
    """The Kubernetes minor versions ("1.30", ...) with strict schemas, oldest first.

    Read from the installed package's data directory without importing the package.
    """
    return tuple(sorted(_strict_dirs(), key=_version_key))


def _minor(version: str, shipped: tuple[str, ...]) -> str:
    match = _VERSION.match(version)
    minor = f"{match[1]}.{match[2]}" if match else version
    if minor not in shipped:
        raise ValueError(
            f"Kubernetes version {version!r} is not shipped by kubernetes-validate "
            f"(it has {shipped[0]} to {shipped[-1]})"
        )
    return minor


def _identity(obj: object) -> tuple[str, str]:
    if not isinstance(obj, dict):
        return "", ""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return str(obj.get("kind") or ""), str(name or "")


@functools.cache
def _strict_dirs() -> dict[str, Path]:
    """Each shipped minor version ("1.30") and its strict schema directory (the newest patch)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes-validate is not installed")
    found: dict[str, tuple[tuple[int, ...], Path]] = {}
    for location in spec.submodule_search_locations:
        schemas = Path(location) / _SCHEMA_DIR
        if schemas.is_dir():
            for entry in schemas.iterdir():
                match = _STRICT_DIR.match(entry.name)
                if match:
                    minor = f"{match[1]}.{match[2]}"
                    patch = _version_key(entry.name[1:].split("-")[0])
                    if minor not in found or patch > found[minor][0]:
                        found[minor] = (patch, entry)
    if not found:
        raise ImportError("kubernetes-validate ships no strict schemas")
    return {minor: directory for minor, (_, directory) in found.items()}


LATEST: str = shipped_versions()[-1]


@functools.cache
def _definitions(directory: Path) -> Any:
    return json.loads((directory / "_definitions.json").read_text(encoding="utf-8"))


@functools.cache
def _validator(minor: str, kind: str, api_version: str) -> Any:
    """The strict validator of one kind in one version, or None when it has no schema there.

    Built once per kind and version from kubernetes-validate's own schema files, as its
    `validate` builds it; that function reads and parses the version's definitions (megabytes)
    on every call, which made validating a cohort's charts take minutes."""
    import jsonschema  # lazily, as in _check
    from referencing import Registry, Resource

    directory = _strict_dirs()[minor]
    # rbac.authorization.k8s.io/v1 -> rbac-v1, apps/v1 -> apps-v1, v1 -> v1 (the package's naming)
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema_file = directory / f"{kind.lower()}-{group_version}.json"
    if not schema_file.is_file():
        return None
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    registry = Resource.from_contents(_definitions(directory)) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _check(obj: object, version: str) -> str | None:
    """The first schema problem of one object in one version (the error jsonschema ranks
    best, as kubernetes-validate reports it), or None."""
    import jsonschema  # lazily: only the bundle checks validate, and it is slow to import

    if not isinstance(obj, dict):
        return f"not a mapping but {type(obj).__name__}"
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return "apiVersion and kind must be strings"
    validator = _validator(version, obj["kind"], obj["apiVersion"])
    if validator is None:
        return f"no schema for {obj['apiVersion']} {obj['kind']} in Kubernetes {version}"
    try:
        validator.validate(obj)
    except jsonschema.ValidationError as error:
        where = ".".join(str(step) for step in error.path)
        return f"{where}: {error.message}" if where else error.message
    return None


def validate_objects(
    objects: list[dict[str, Any]],
    versions: tuple[str, ...] = ("1.30", LATEST),
) -> list[SchemaProblem]:
    """Every strict-schema problem of `objects` in each of `versions`."""
    shipped = shipped_versions()
    minors = [_minor(version, shipped) for version in versions]
    problems: list[SchemaProblem] = []
    for obj in objects:
        kind, name = _identity(obj)
        for minor in minors:
            message = _check(obj, minor)
            if message is not None:
                problems.append(SchemaProblem(kind, name, minor, message))
    return sorted(problems, key=lambda p: (p.kind, p.name, _version_key(p.version), p.message))
