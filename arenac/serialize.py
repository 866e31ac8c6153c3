"""The one serializer: canonical JSON and YAML for every generated artefact.

Sorted keys, LF line endings, UTF-8, a trailing newline, no timestamps. Two runs over
the same data produce the same bytes, whatever PYTHONHASHSEED is.
"""

from __future__ import annotations

import json
from typing import Any


def dump_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _yaml_dumper():
    import yaml

    # libyaml's emitter writes the same bytes as the pure-Python one (tests/test_determinism.py
    # checks it over every bundle), four times faster; machines without libyaml use the latter.
    return getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: Any, dumper=None) -> str:
    import yaml

    return yaml.dump(data, Dumper=dumper or _yaml_dumper(), sort_keys=True, default_flow_style=False,
                     allow_unicode=True, width=100)


def load_yaml(text: str) -> Any:
    """Parse one YAML document safely, with libyaml's parser when present (about ten times faster
    than the pure-Python one; the library's files are read on every `arenac check`)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def dump_yaml_documents(documents: list[Any]) -> str:
    return "".join("---\n" + dump_yaml(doc) for doc in documents)


def model_data(model) -> Any:
    """A pydantic model as plain JSON-compatible data."""
    return model.model_dump(mode="json")
