"""Lower a task's `healthy { }` block: how its substrate is configured when healthy.

    healthy {
      config(redis.appendonly) = "yes"
    }

Contract: `lower_healthy(task, entry, ctx, spans)` turns each `config(SERVICE.KEY) = VALUE` of the
task's one `healthy` block into a `HealthySetting` (model/task.py): the value the key has in every
variant's chart and in the healthy control's alike, from install on. It records where each was
written (`spans.healthy`, by `SERVICE.KEY`) for the checks after lowering (validate.py, E0532: a
fault that injects the same key). Each problem is reported into the context's collector and the
setting left out:

- a target that is not `config(SERVICE.KEY)` (E0204 for another kind, E0305 for another shape),
  an unknown service or key (E0203, with the near name: lower/targets.py);
- a key the task cannot set (E0216): one the harness owns (model/substrate.py
  `harness_owned_key`: TIME_SCALE, DB_ROLE, AUTH_SECRET, PG_*, *_URL), RELEASE (the image a
  service runs: its release), or one the substrate chart writes from no value of its own;
- a value of another kind than the key's (lower/config_keys.py: E0302 a name for a number or the
  reverse, E0301 a quantity of another dimension); a number or quantity is written in the key's
  own unit (`3s` for a `_MS` key is "3000", `512Mi` for a size is "536870912"), a name or string as
  it is;
- a key set twice (E0208), or a second `healthy` block (E0208).

Where the chart's values hold a key is read off the substrate chart's own default values
(`values_path`), never written here per key: the block sets what the chart already reads.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from arenac.core.serialize import load_yaml
from arenac.core.units import Dimension
from arenac.lower.config_keys import key_type
from arenac.lower.exprs import ExprContext, dimension_words
from arenac.lower.source_map import SourceMap
from arenac.lower.targets import resolve_target
from arenac.model.library import SubstrateEntry
from arenac.model.substrate import Service, harness_owned_key
from arenac.model.task import HealthySetting
from arenac.syntax import ast
from arenac.syntax.unparse import value_text

# a service's release (its image) and the substrate's time scale: config keys the chart writes from
# `services.S.release` and `timeScale`, not from the service's config
_NOT_CONFIG = {"RELEASE": "the release (the image) the service runs, not its configuration",
               "TIME_SCALE": "the harness's time scale, not the substrate's configuration"}
_HARNESS_OWNED = "the harness's to set (each service's database role and wiring are the experiment's)"


def lower_healthy(task: ast.TaskDecl, entry: SubstrateEntry, ctx: ExprContext,
                  spans: SourceMap) -> tuple[HealthySetting, ...]:
    """The settings of the task's `healthy` block, in their order (see the module docstring)."""
    blocks = [s for s in task.statements if isinstance(s, ast.HealthyDecl)]
    for extra in blocks[1:]:
        ctx.collector.error("E0208", "the healthy block is given twice", extra.span,
                            "set every key in one `healthy { }` block")
    if not blocks:
        return ()
    chart = chart_values(entry.chart_dir)
    found: list[HealthySetting] = []
    for stmt in blocks[0].settings:
        setting = _setting(stmt, chart, ctx)
        if setting is None:
            continue
        if setting.ref in spans.healthy:
            first = spans.healthy[setting.ref]
            ctx.collector.error("E0208", f"config({setting.ref}) is set twice in the healthy block",
                                stmt.target.span, f"it is set on line {first.line} already: keep one")
            continue
        spans.healthy[setting.ref] = stmt.target.span
        found.append(setting)
    return tuple(found)


def _setting(stmt: ast.HealthySetting, chart: dict[str, Any], ctx: ExprContext) -> HealthySetting | None:
    errors = ctx.collector
    call = stmt.target
    kind = call.func.text
    if kind != "config":
        errors.error("E0204", f"a healthy block sets config keys, not {kind}(...)", call.func.span,
                     "write `config(SERVICE.KEY) = VALUE`: the substrate's configuration as its chart installs it")
        return None
    ref = call.args[0].alternatives[0] if len(call.args) == 1 and call.args[0].name is None else None
    if ref is None or len(call.args[0].alternatives) != 1 or not isinstance(ref, ast.Ref) or len(ref.parts) != 2:
        errors.error("E0305", "a healthy setting names one config key, SERVICE.KEY", call.span,
                     "e.g. `config(redis.appendonly) = \"yes\"`")
        return None
    service_name, key = ref.parts
    service = ctx.substrate.service(service_name)
    if service is None:
        resolve_target("config", ref, ctx)  # reports the unknown service, with the near one
        return None
    if harness_owned_key(key) or key in _NOT_CONFIG:  # said so whether the descriptor lists the key or not
        why = _NOT_CONFIG.get(key, _HARNESS_OWNED)
        errors.error("E0216", f"config({ref.text}) is {why}: a task's healthy block cannot set it", ref.span,
                     _settable_hint(service, chart))
        return None
    if not resolve_target("config", ref, ctx):  # an unknown key, with the near one
        return None
    path = values_path(chart, service, key)
    if path is None:
        errors.error("E0216", f"config({ref.text}) is written by the substrate's chart from no value of its own, "
                     "so a task cannot set it", ref.span, _settable_hint(service, chart))
        return None
    value = _value(stmt.value, service, key, ctx)
    if value is None:
        return None
    return HealthySetting(service=service_name, key=key, value=value, values_path=path)


def _value(node: ast.Value, service: Service, key: str, ctx: ExprContext) -> str | None:
    """The ConfigMap's string for NODE, of the key's kind (see the module docstring); None after an error."""
    errors = ctx.collector
    shown = f"config({service.name}.{key})"
    healthy = service.config[key]
    kind = key_type(key, healthy)
    if isinstance(node, ast.Call) or (isinstance(node, ast.StringLit) and "\n" in node.value):
        errors.error("E0305", f"{shown} is set to one value: a name, a string, a number or a quantity", node.span)
        return None
    if kind.dimension is None:  # a name
        if isinstance(node, ast.StringLit):
            return node.value
        if isinstance(node, ast.Ref) and len(node.parts) == 1:
            return node.text
        errors.error("E0302", f"{shown} holds a name, not {value_text(node)}", node.span,
                     f"write it as a string, e.g. `{shown} = \"{healthy}\"`")
        return None
    example = _example(kind.dimension, healthy)
    if isinstance(node, ast.StringLit | ast.Ref):
        written = "a string" if isinstance(node, ast.StringLit) else "a name"
        errors.error("E0302", f"{shown} holds {dimension_words(kind.dimension)}, not {written} ({value_text(node)})",
                     node.span, f"write {dimension_words(kind.dimension)}, e.g. `{shown} = {example}`")
        return None
    if isinstance(node, ast.QuantityLit) and node.quantity.dimension != kind.dimension:
        errors.error("E0301", f"{shown} holds {dimension_words(kind.dimension)}, not "
                     f"{dimension_words(node.quantity.dimension)} ('{node.quantity.text}')", node.span,
                     f"write {dimension_words(kind.dimension)}, e.g. `{shown} = {example}`")
        return None
    number = node.value if isinstance(node, ast.NumberLit) else round(node.quantity.value / kind.unit, 9)
    if number < 0:
        errors.error("E0308", f"{shown} cannot be negative", node.span)
        return None
    return str(int(number)) if float(number).is_integer() else repr(number)


def _example(dimension: Dimension, healthy: str) -> str:
    """A value of the key's kind for a hint: its healthy value where that is a plain number."""
    try:
        float(healthy)
    except ValueError:
        return {Dimension.size: "512Mi", Dimension.duration: "2s"}.get(dimension, "10")
    return healthy


def _settable_hint(service: Service, chart: dict[str, Any]) -> str:
    keys = [key for key in service.config
            if not harness_owned_key(key) and key not in _NOT_CONFIG and values_path(chart, service, key)]
    return f"{service.name}'s keys a task may set: {', '.join(keys)}" if keys else \
        f"a task sets none of {service.name}'s keys"


# ---- where the chart's values hold a key -------------------------------------------------------


@functools.lru_cache(maxsize=8)
def chart_values(chart_dir: Path) -> dict[str, Any]:
    """The substrate chart's default values (its values.yaml), read once per process."""
    path = chart_dir / "values.yaml"
    data = load_yaml(path.read_text(encoding="utf-8")) if path.is_file() else None
    return data if isinstance(data, dict) else {}


def values_path(chart: dict[str, Any], service: Service, key: str) -> str | None:
    """Where the substrate chart's values hold config key KEY of SERVICE, read off the chart's own
    default values: the first of these that they hold
    - `services.S.config.KEY`: an application service's ConfigMap is its `config` (spine's
      spine-S-config: the chart writes every key of it);
    - `S.KEY`: a datastore's ConfigMap key written from its own value (`redis.appendonly`);
    - `S.P.REST` for KEY = `P-REST` where `S.P` is a mapping: one ConfigMap key per entry of it
      (`redis.acl.fanout` is the ConfigMap's `acl-fanout`), the entry set whether the mapping holds
      one or not.
    None: the chart's values hold none of them (tests/lower/test_healthy.py renders the chart with
    each path the descriptor's keys get, and finds the value in the service's ConfigMap)."""
    candidates: list[tuple[str, ...]] = [("services", service.name, "config", key), (service.name, key)]
    for found in _held(chart, candidates):
        return ".".join(found)
    prefix, dash, rest = key.partition("-")
    if dash and rest and isinstance(_at(chart, (service.name, prefix)), dict):
        return ".".join((service.name, prefix, rest))
    return None


def _held(chart: dict[str, Any], candidates: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    return [path for path in candidates if _at(chart, path) is not None and not isinstance(_at(chart, path), dict)]


def _at(tree: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree
