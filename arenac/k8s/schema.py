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

import importlib.util
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
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes-validate is not installed")
    found: set[str] = set()
    for location in spec.submodule_search_locations:
        schemas = Path(location) / _SCHEMA_DIR
        if schemas.is_dir():
            for entry in schemas.iterdir():
                match = _STRICT_DIR.match(entry.name)
                if match:
                    found.add(f"{match[1]}.{match[2]}")
    if not found:
        raise ImportError("kubernetes-validate ships no strict schemas")
    return tuple(sorted(found, key=_version_key))


LATEST: str = shipped_versions()[-1]


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


def _check(obj: object, version: str) -> str | None:
    """The first schema problem of one object in one version, or None."""
    # lazily: kubernetes-validate loads its schemas at import; only the bundle checks need it
    import kubernetes_validate  # type: ignore[import-untyped]

    if not isinstance(obj, dict):
        return f"not a mapping but {type(obj).__name__}"
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return "apiVersion and kind must be strings"
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(step) for step in error.path)
        return f"{where}: {error.message}" if where else error.message
    except kubernetes_validate.SchemaNotFoundError:
        return f"no schema for {obj['apiVersion']} {obj['kind']} in Kubernetes {version}"
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
