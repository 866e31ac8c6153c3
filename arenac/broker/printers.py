"""How `kubectl get` and `kubectl describe` print objects: tables (default and wide), yaml, json,
name, jsonpath, and the describe text, in kubectl's layout."""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from arenac.broker import jsonpath

Row = list[str]


def age(stamp: str | None, now: float | None = None) -> str:
    if not stamp:
        return "<unknown>"
    seconds = int((now or time.time()) - calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    seconds = max(seconds, 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    return f"{days}d{hours % 24}h" if days < 8 and hours % 24 else f"{days}d"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's tabwriter layout: columns padded to the widest cell plus three spaces."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in (headers, *rows):
        # the last cell is not padded: row[:-1] is one short of widths
        padded = [str(cell).ljust(width + 3) for cell, width in zip(row[:-1], widths, strict=False)]
        cells = padded + [str(row[-1])]
        lines.append("".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _pod(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    status = obj["status"]
    container = status["containerStatuses"][0]
    state = container["state"]
    shown = "Running" if "running" in state else state.get("waiting", {}).get("reason", status["phase"])
    row = [_meta(obj)["name"], f"{1 if container['ready'] else 0}/1", shown, str(container["restartCount"]),
           age(_meta(obj).get("creationTimestamp"))]
    headers = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        headers += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
        row += [status.get("podIP", "<none>"), obj["spec"].get("nodeName", "<none>"), "<none>", "<none>"]
    return headers, row


def _workload(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    status, spec = obj["status"], obj["spec"]
    ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}"
    if obj["kind"] == "Deployment":
        headers = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        row = [_meta(obj)["name"], ready, str(status.get("updatedReplicas", 0)),
               str(status.get("availableReplicas", 0)), age(_meta(obj).get("creationTimestamp"))]
    else:
        headers = ["NAME", "READY", "AGE"]
        row = [_meta(obj)["name"], ready, age(_meta(obj).get("creationTimestamp"))]
    if wide:
        containers = spec["template"]["spec"]["containers"]
        headers += ["CONTAINERS", "IMAGES"]
        row += [",".join(c["name"] for c in containers), ",".join(c["image"] for c in containers)]
        if obj["kind"] == "Deployment":
            headers.append("SELECTOR")
            row.append(",".join(f"{k}={v}" for k, v in spec["selector"]["matchLabels"].items()))
    return headers, row


def _replicaset(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    status = obj["status"]
    return (["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
            [_meta(obj)["name"], str(obj["spec"]["replicas"]), str(status["replicas"]),
             str(status["readyReplicas"]), age(_meta(obj).get("creationTimestamp"))])


def _configmap(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    return ["NAME", "DATA", "AGE"], [_meta(obj)["name"], str(len(obj.get("data") or {})),
                                     age(_meta(obj).get("creationTimestamp"))]


def _service(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    spec = obj["spec"]
    ports = ",".join(f"{p['port']}/{p['protocol']}" for p in spec["ports"])
    headers = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    row = [_meta(obj)["name"], spec["type"], spec["clusterIP"], "<none>", ports,
           age(_meta(obj).get("creationTimestamp"))]
    if wide:
        headers.append("SELECTOR")
        row.append(",".join(f"{k}={v}" for k, v in spec["selector"].items()))
    return headers, row


def _event(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    involved = obj["involvedObject"]
    return (["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            [age(obj.get("lastTimestamp")), obj["type"], obj["reason"],
             f"{involved['kind'].lower()}/{involved['name']}", obj["message"]])


def _namespace(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    return ["NAME", "STATUS", "AGE"], [_meta(obj)["name"], obj["status"]["phase"],
                                       age(_meta(obj).get("creationTimestamp"))]


def _generic(obj: dict[str, Any], wide: bool) -> tuple[Row, Row]:
    return ["NAME", "AGE"], [_meta(obj)["name"], age(_meta(obj).get("creationTimestamp"))]


COLUMNS: dict[str, Callable[[dict[str, Any], bool], tuple[Row, Row]]] = {
    "Pod": _pod, "Deployment": _workload, "StatefulSet": _workload, "ReplicaSet": _replicaset,
    "ConfigMap": _configmap, "Service": _service, "Event": _event, "Namespace": _namespace,
}


def qualified_name(obj: dict[str, Any]) -> str:
    group = obj.get("apiVersion", "v1").rpartition("/")[0]
    kind = obj["kind"].lower() + (f".{group}" if group else "")
    return f"{kind}/{_meta(obj)['name']}"


def as_list(objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": list(objects), "kind": "List", "metadata": {"resourceVersion": ""}}


def render(objects: Sequence[dict[str, Any]], output: str, *, single: bool, show_kind: bool = False,
           no_headers: bool = False, show_labels: bool = False) -> str:
    """Print objects as `kubectl get -o OUTPUT` does; `single`: one object was asked for by name."""
    data: Any = objects[0] if single and len(objects) == 1 else as_list(objects)
    if output == "yaml":
        return yaml.safe_dump(data, default_flow_style=False, sort_keys=True)
    if output == "json":
        return json.dumps(data, indent=4, sort_keys=True) + "\n"
    if output == "name":
        return "".join(qualified_name(obj) + "\n" for obj in objects)
    if output.startswith("jsonpath=") or output.startswith("jsonpath-as-json="):
        return jsonpath.render(output.split("=", 1)[1], data)
    if output not in ("", "wide"):
        raise ValueError(f'unable to match a printer suitable for the output format "{output}", allowed formats '
                         "are: json,jsonpath,jsonpath-as-json,name,wide,yaml")
    out, kinds = [], []
    for obj in objects:
        if obj["kind"] not in kinds:
            kinds.append(obj["kind"])
    for kind in kinds:
        rows: list[Row] = []
        headers: Row = []
        for obj in (o for o in objects if o["kind"] == kind):
            headers, row = COLUMNS.get(kind, _generic)(obj, output == "wide")
            if show_kind:
                row[0] = qualified_name(obj)
            if show_labels:
                headers = [*headers, "LABELS"]
                labels = sorted((_meta(obj).get("labels") or {}).items())
                row.append(",".join(f"{k}={v}" for k, v in labels) or "<none>")
            rows.append(row)
        text = table(headers, rows)
        out.append("\n".join(text.splitlines()[1:]) + "\n" if no_headers else text)
    return "\n".join(out)


# -- describe ----------------------------------------------------------------------------------
def _labels_block(title: str, values: dict[str, str] | None, indent: int = 14) -> list[str]:
    if not values:
        return [title.ljust(indent) + "<none>"]
    items = [f"{k}={v}" for k, v in sorted(values.items())]
    return [title.ljust(indent) + items[0], *(" " * indent + item for item in items[1:])]


def _env_lines(env: list[dict[str, str]] | None, pad: str) -> list[str]:
    if not env:
        return [f"{pad}Environment:  <none>"]
    return [f"{pad}Environment:", *(f"{pad}  {e['name']}:  {e.get('value', '')}" for e in env)]


def _events_lines(events: list[dict[str, Any]] | None) -> list[str]:
    if events is None:
        return []
    if not events:
        return ["Events:  <none>"]
    headers = ["Type", "Reason", "Age", "From", "Message"]
    rows = [["-" * len(h) for h in headers],
            *([e["type"], e["reason"], age(e["lastTimestamp"]), "arenac-local", e["message"]] for e in events)]
    return ["Events:", *("  " + line for line in table(headers, rows).splitlines())]


def describe(obj: dict[str, Any], events: list[dict[str, Any]] | None) -> str:
    meta, kind = _meta(obj), obj["kind"]
    lines = [f"Name:         {meta['name']}"]
    if meta.get("namespace"):
        lines.append(f"Namespace:    {meta['namespace']}")
    lines += _labels_block("Labels:", meta.get("labels"))
    lines += _labels_block("Annotations:", meta.get("annotations"))
    if kind == "ConfigMap":
        lines += ["", "Data", "===="]
        for key, value in sorted((obj.get("data") or {}).items()):
            lines += [f"{key}:", "----", str(value), ""]
        lines += ["", "BinaryData", "====", ""]
    elif kind in ("Deployment", "StatefulSet"):
        spec, status = obj["spec"], obj["status"]
        lines.append(f"CreationTimestamp:  {meta.get('creationTimestamp')}")
        lines.append("Selector:           " + ",".join(f"{k}={v}" for k, v in spec["selector"]["matchLabels"].items()))
        lines.append(f"Replicas:           {spec['replicas']} desired | {status.get('updatedReplicas', 0)} updated | "
                     f"1 total | {status.get('availableReplicas', 0)} available | "
                     f"{1 - status.get('availableReplicas', 0)} unavailable")
        lines.append("Pod Template:")
        lines += ["  " + line for line in _labels_block("Labels:", spec["template"]["metadata"].get("labels"))]
        annotations = spec["template"]["metadata"].get("annotations")
        lines += ["  " + line for line in _labels_block("Annotations:", annotations)]
        lines.append("  Containers:")
        for c in spec["template"]["spec"]["containers"]:
            lines += [f"   {c['name']}:", f"    Image:        {c['image']}",
                      f"    Port:         {c['ports'][0]['containerPort']}/TCP", *_env_lines(c.get("env"), "    ")]
        for cond in status.get("conditions", []):
            lines.append(f"Condition {cond['type']}: {cond['status']} ({cond['reason']})"
                         + (f": {cond['message']}" if cond.get("message") else ""))
    elif kind == "Pod":
        status, spec = obj["status"], obj["spec"]
        container = status["containerStatuses"][0]
        state = container["state"]
        lines += [f"Start Time:   {status.get('startTime')}", f"Status:       {status['phase']}",
                  f"IP:           {status.get('podIP')}", "Containers:", f"  {container['name']}:",
                  f"    Image:          {container['image']}",
                  "    State:          " + ("Running" if "running" in state else "Waiting"),
                  *(["      Started:      " + state["running"]["startedAt"]] if "running" in state else
                    ["      Reason:       " + state["waiting"]["reason"]]),
                  f"    Ready:          {container['ready']!s}",
                  f"    Restart Count:  {container['restartCount']}",
                  *_env_lines(spec["containers"][0].get("env"), "    "),
                  "Conditions:", "  Type    Status",
                  *(f"  {c['type']}   {c['status']}" for c in status["conditions"])]
    elif kind == "Service":
        spec = obj["spec"]
        lines += ["Selector:     " + ",".join(f"{k}={v}" for k, v in spec["selector"].items()),
                  f"Type:         {spec['type']}", f"IP:           {spec['clusterIP']}"]
        lines += [f"Port:         {p['name']}  {p['port']}/{p['protocol']}" for p in spec["ports"]]
    else:
        body = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}
        lines += ["", yaml.safe_dump(body, default_flow_style=False, sort_keys=True).rstrip()]
    lines += _events_lines(events)
    return "\n".join(lines) + "\n"
