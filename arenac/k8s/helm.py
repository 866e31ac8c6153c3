"""Render a Helm chart directory into Kubernetes objects, offline.

Contract of `render_chart(chart_dir, values, release, namespace)`:

- The chart is loaded afresh from `chart_dir` on every call and rendered with
  helm-python-sdk (Helm's own Go engine behind a C ABI): no cluster, no network, no
  `helm` binary. `values` are coalesced over the chart's `values.yaml` exactly as an
  install would; `release` and `namespace` become `.Release.Name` and
  `.Release.Namespace`.
- Subcharts under `chart_dir/charts/` are rendered with their values scope and their
  `condition`/`tags` honoured. `NOTES.txt`, partials (`_*.tpl`) and documents that
  render empty yield nothing. CRDs under `crds/` are not templates and are not
  returned.
- The result is one plain JSON-compatible dict per rendered object (YAML timestamps
  stay strings), sorted by (kind, namespace, name), with a missing namespace sorting
  as "". The namespace is not filled in: an object keeps exactly what the template
  wrote. Ties (the same kind/namespace/name twice) are broken by apiVersion, then by
  template path and document position, so two renders of the same inputs are equal.
- Every rendered document must be a mapping with string `apiVersion`, `kind` and
  `metadata.name`.
- `manifest_objects(manifest, shown)` reads a release's manifest (Helm's install output) into
  objects the same way, in the manifest's order.
- Any failure (unreadable chart, template error, bad values, unparsable output)
  raises `HelmRenderError`; its message names the chart by its path relative to the
  working directory and never carries an absolute path.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

__all__ = ["HelmRenderError", "manifest_objects", "render_chart"]

_NOTES = "NOTES.txt"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class HelmRenderError(Exception):
    """A chart could not be rendered into Kubernetes objects."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@functools.cache
def _manifest_loader() -> type:
    """A SafeLoader that keeps timestamps as strings, as Kubernetes reads them."""
    class ManifestLoader(yaml.SafeLoader):
        pass

    ManifestLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return ManifestLoader


@dataclass(frozen=True)
class _Rendered:
    """One object with where it came from, for a total, deterministic order."""

    template: str
    index: int
    body: dict[str, Any]

    def sort_key(self) -> tuple[str, str, str, str, str, int]:
        metadata = self.body["metadata"]
        return (
            self.body["kind"],
            str(metadata.get("namespace") or ""),
            metadata["name"],
            self.body["apiVersion"],
            self.template,
            self.index,
        )


def _display_path(chart_dir: Path) -> str:
    return Path(os.path.relpath(chart_dir)).as_posix()


def _scrub(text: str, chart_dir: Path, shown: str) -> str:
    """Replace the chart's absolute location in a library message by its relative path."""
    absolute = {str(chart_dir.absolute()), str(chart_dir.resolve())}
    for location in sorted(absolute, key=len, reverse=True):
        text = text.replace(location, shown)
    return text


def _is_notes(template: str) -> bool:
    return PurePosixPath(template).name == _NOTES


def _objects_of(template: str, text: str, shown: str) -> list[_Rendered]:
    try:
        documents = list(yaml.load_all(text, Loader=_manifest_loader()))
    except yaml.YAMLError as error:
        raise HelmRenderError(f"{shown}: {template} is not valid YAML after rendering: {error}") from None
    objects: list[_Rendered] = []
    for index, document in enumerate(documents):
        if document is None:
            continue
        where = f"{shown}: {template} document {index}"
        if not isinstance(document, dict):
            raise HelmRenderError(f"{where} is not a mapping")
        metadata = document.get("metadata")
        if not isinstance(document.get("apiVersion"), str) or not isinstance(document.get("kind"), str):
            raise HelmRenderError(f"{where} has no apiVersion or kind")
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            raise HelmRenderError(f"{where} has no metadata.name")
        objects.append(_Rendered(template, index, document))
    return objects


def manifest_objects(manifest: str, shown: str) -> list[dict[str, Any]]:
    """The objects of a release's manifest (Helm's install output: the documents of every
    template, `# Source:` comments between them), read as `render_chart` reads a template's: the
    same checks, timestamps kept as strings; `shown` names it in a `HelmRenderError`."""
    return [item.body for item in _objects_of("the manifest", manifest, shown)]


def render_chart(
    chart_dir: Path,
    values: dict[str, Any] | None = None,
    release: str = "arenac",
    namespace: str = "arenac",
) -> list[dict[str, Any]]:
    """Every Kubernetes object the chart renders to, sorted by (kind, namespace, name)."""
    import helm_python  # lazily: loads the Helm engine (a shared library); only chart rendering needs it

    chart_dir = Path(chart_dir)
    shown = _display_path(chart_dir)
    try:
        payload = None if values is None else json.loads(json.dumps(values, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise HelmRenderError(f"{shown}: values are not plain JSON data: {error}") from None
    # A loaded chart is not immutable: rendering drops subcharts whose condition is
    # false from the handle itself, so every render gets its own fresh load.
    try:
        with helm_python.Chart.load(chart_dir) as chart:
            manifests = chart.render(payload, name=release, namespace=namespace)
    except helm_python.HelmError as error:
        detail = _scrub(str(error), chart_dir, shown)
        raise HelmRenderError(f"{shown}: {type(error).__name__}: {detail}") from None

    rendered: list[_Rendered] = []
    for template in sorted(manifests):
        if not _is_notes(template):
            rendered.extend(_objects_of(template, manifests[template], shown))
    return [item.body for item in sorted(rendered, key=_Rendered.sort_key)]
