"""The brokered kubectl's read commands: get, describe, logs, auth can-i, version, api-resources
(the API requests each sends: kubectl.py)."""

from __future__ import annotations

from arenac.broker import printers
from arenac.broker.cluster import ClusterError
from arenac.broker.kubeargs import (
    RESOURCE_TYPES,
    Parsed,
    field_name,
    is_subresource,
    match_labels,
    resource_type,
    targets,
)
from arenac.broker.kubectl_session import EVENTS, KUBECTL_VERSION, LOG, PODS, KubectlSession
from arenac.broker.outcome import Failed


class ReadCommands(KubectlSession):
    def _cmd_get(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        wanted = targets(p.args)
        if not wanted:
            raise Failed('You must specify the type of resource to get. Use "kubectl api-resources" for a complete '
                         "list of supported resources.\n\nerror: Required resource not specified.")
        selected = field_name(p.value("field_selector"))
        for rt, name in wanted:
            if name:
                self.need("get", rt, name)
            else:
                self.need("list", rt, selected)
            if p.flag("watch"):
                self.need("watch", rt, name or selected)
        found, code = [], 0
        for rt, name in wanted:
            if name:
                try:
                    found.append(self.object(rt, name))
                except ClusterError as exc:
                    if not p.flag("ignore_not_found"):
                        self._err.append(str(exc))
                        code = 1
                continue
            items = self.objects(rt)
            if selected:
                items = [o for o in items if o["metadata"]["name"] == selected]
            if p.value("selector"):
                items = [o for o in items if match_labels(p.value("selector") or "", o["metadata"].get("labels") or {})]
            found.extend(items)
        output = p.value("output", "") or ""
        if not found and not any(name for _, name in wanted):
            if output in ("json", "yaml"):
                self._out.append(printers.render([], output, single=False))
            elif not p.flag("ignore_not_found"):
                where = "" if self._all_ns or not wanted[0][0].namespaced else f" in {self._ns} namespace"
                self._err.append(f"No resources found{where}.")
            return code
        if found:
            try:
                self._out.append(printers.render(found, output, single=len(wanted) == 1 and wanted[0][1] is not None,
                                                 show_kind=len({rt for rt, _ in wanted}) > 1 or p.flag("show_kind"),
                                                 no_headers=p.flag("no_headers"), show_labels=p.flag("show_labels")))
            except ValueError as exc:
                raise Failed(f"error: {exc}") from None
        return code

    def _cmd_describe(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        wanted = targets(p.args)
        if not wanted:
            raise Failed('You must specify the type of resource to describe. Use "kubectl api-resources" for a '
                         "complete list of supported resources.")
        shown = []
        for rt, name in wanted:
            if name:
                self.need("get", rt, name)
                try:
                    shown.append(self.object(rt, name))
                    continue
                except ClusterError:
                    self.need("list", rt)  # describe falls back to a prefix match over a list
                    matches = [o for o in self.objects(rt) if o["metadata"]["name"].startswith(name)]
                    if not matches:
                        raise
                    shown.extend(matches)
            else:
                self.need("list", rt)
                items = self.objects(rt)
                if p.value("selector"):
                    selector = p.value("selector") or ""
                    items = [o for o in items if match_labels(selector, o["metadata"].get("labels") or {})]
                shown.extend(items)
        if not shown:
            self._err.append(f"No resources found in {self._ns} namespace.")
        events_ok = self.may("list", EVENTS)
        texts = []
        for obj in shown:
            events = None
            if events_ok and p.value("show_events", "true") != "false":
                events = self.cluster.event_objects(obj["kind"], obj["metadata"]["name"])
            texts.append(printers.describe(obj, events))
        self._out.append("\n\n".join(texts))
        return 0

    def _cmd_logs(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        if p.value("selector"):
            self.need("list", PODS)
            pods = [o["metadata"]["name"] for o in self.objects(PODS)
                    if match_labels(p.value("selector") or "", o["metadata"].get("labels") or {})]
        elif p.args:
            rt, name = (targets(p.args[:1])[0] if "/" in p.args[0] else (PODS, p.args[0]))
            pods = [self._pod_of(rt, name or "")]
        else:
            raise Failed("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
                         "POD or TYPE/NAME is a required argument for the logs command")
        tail = int(p.value("tail") or -1)
        for pod in pods:
            self.need("get", PODS, pod, LOG)
            component = self.cluster.pod_component(pod)
            container = p.value("container")
            if container and container != component:
                raise Failed(f"error: container {container} is not valid for pod {pod}")
            if p.flag("previous"):
                raise ClusterError(f'Error from server (BadRequest): previous terminated container "{component}" '
                                   f'in pod "{pod}" not found')
            text = self.cluster.pod_logs(pod, None if tail < 0 else tail)
            if p.flag("prefix") or (len(pods) > 1 and p.value("selector")):
                text = "".join(f"[pod/{pod}/{component}] {line}" for line in text.splitlines(keepends=True))
            self._out.append(text)
        return 0


    # -- informational -----------------------------------------------------------------------
    def _cmd_auth(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        if not p.args or p.args[0] != "can-i":
            raise Failed('error: the brokered kubectl supports "auth can-i"')
        if p.flag("list"):
            rows = [[",".join(f"{r}.{g}" if g else r for r in rule.resources for g in rule.api_groups),
                     "[]", "[" + " ".join(rule.resource_names) + "]", "[" + " ".join(rule.verbs) + "]"]
                    for rule in self.authz.rules_in(self._ns)]
            self._out.append(printers.table(["Resources", "Non-Resource URLs", "Resource Names", "Verbs"], rows))
            return 0
        if len(p.args) < 3:
            raise Failed("error: you must specify two arguments: verb resource or verb resource/resourceName.")
        verb, resource = p.args[1], p.args[2]
        kind, _, name = resource.partition("/")
        sub = p.value("subresource") or ""
        if name and "/" not in resource[len(kind) + 1:] and is_subresource(name):
            name, sub = "", name
        rt = resource_type(kind)
        name = name or (p.args[3] if len(p.args) > 3 else "")
        allowed = self.may(verb, rt, name, sub)
        if not p.flag("quiet"):
            self._out.append("yes" if allowed else "no")
        return 0 if allowed else 1

    def _cmd_version(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        self._out.append(f"Client Version: {KUBECTL_VERSION}\nKustomize Version: v5.0.4\n"
                         f"Server Version: {KUBECTL_VERSION}+arenac-local")
        return 0

    def _cmd_api_resources(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        rows = [[rt.plural, ",".join(rt.short), rt.api_version, str(rt.namespaced).lower(), rt.kind]
                for rt in RESOURCE_TYPES]
        self._out.append(printers.table(["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"], rows))
        return 0

