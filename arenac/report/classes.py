"""The failure classes of a trial, through the campaign's failure taxonomy
(arenac/campaign/taxonomy.py: `classify(run_dir)`, `CLASSES`), when this arenac has it.

Contract:
- `available()`: whether the taxonomy can be imported; `known_classes()` its `CLASSES` in order
  (() without it).
- `classes_of(run_dir)`: the classes of one trial, as text; () when the taxonomy is absent or
  says none. A run directory whose evidence the taxonomy cannot read gives `(UNREADABLE,)`: the
  report counts it apart rather than calling it a class-less failure.
- This module is the report's only contact with the taxonomy: it is imported by name
  (importlib), so the report runs, without classes, where the taxonomy is not installed yet.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from types import ModuleType

TAXONOMY = "arenac.campaign.taxonomy"
UNREADABLE = "unclassified (evidence unreadable)"


@cache
def _taxonomy() -> ModuleType | None:
    try:
        return importlib.import_module(TAXONOMY)
    except ImportError:
        return None


def available() -> bool:
    return _taxonomy() is not None


def known_classes() -> tuple[str, ...]:
    taxonomy = _taxonomy()
    return tuple(str(name) for name in taxonomy.CLASSES) if taxonomy is not None else ()


def classes_of(run_dir: Path) -> tuple[str, ...]:
    taxonomy = _taxonomy()
    if taxonomy is None:
        return ()
    unreadable = getattr(taxonomy, "TaxonomyError", OSError)
    try:
        return tuple(str(name) for name in taxonomy.classify(run_dir))
    except (unreadable, OSError):
        return (UNREADABLE,)
