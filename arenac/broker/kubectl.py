"""The brokered `kubectl`: each invocation becomes the API requests real kubectl would send,
each request is authorised by the bundle's RBAC before anything happens, and the effect is
carried out on the LocalCluster.

Requests per command (what the API server sees, in order):
  get TYPE                       list TYPE                 (+ watch with -w; a `metadata.name`
  get TYPE NAME                  get TYPE NAME               field selector names the list)
  describe TYPE NAME             get TYPE NAME (+ list events, optional: skipped if denied)
  logs POD                       get pods POD; get pods/log POD
  logs deploy/X                  get deployments X; list pods; get pods/log POD
  exec POD -- CMD                get pods POD; create pods/exec POD (deploy/X: get deployments X and
                                 list pods first)
  patch TYPE NAME                patch TYPE NAME
  edit TYPE NAME                 get TYPE NAME; patch TYPE NAME
  set env|image deploy/X         get deployments X; patch deployments X
  rollout restart deploy/X       get deployments X; patch deployments X
  rollout status deploy/X        get, list, watch deployments X
  scale deploy/X --replicas=N    get deployments X; patch deployments/scale X
  delete pod P                   delete pods P       (-l SEL: list pods, then delete each)
The first denied request ends the call with the API server's Forbidden message (exit 1).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from arenac.broker import printers
from arenac.broker.cluster import ClusterError, LocalCluster, not_found
from arenac.broker.kubeargs import (
    RESOURCE_TYPES,
    Parsed,
    ResourceType,
    duration_seconds,
    env_changes,
    field_name,
    is_subresource,
    match_labels,
    parse,
    resource_type,
    targets,
)
from arenac.broker.outcome import Denied, Failed, ToolResult
from arenac.broker.patch import PatchError, apply_patch
from arenac.broker.rbac import ApiRequest, Authorizer

PODS, LOG, EVENTS = resource_type("pods"), "log", resource_type("events")
WORKLOADS = ("deployments", "statefulsets")
KUBECTL_VERSION = "v1.30.0"


class Kubectl:
    """One kubectl invocation (it keeps per-call state: make one per call)."""

    def __init__(self, cluster: LocalCluster, authorizer: Authorizer, rbac_objects: Sequence[dict[str, Any]] = (),
                 max_wait: float = 600.0, exec_into: Sequence[str] = ()) -> None:
        self.cluster = cluster
        self.exec_into = tuple(exec_into)  # when set, exec only into these workloads (the surface's list)
        self.authz = authorizer
        self.rbac_objects = list(rbac_objects)
        self.max_wait = max_wait

    def run(self, argv: Sequence[str], stdin: bytes | None = None, edit_content: str | None = None) -> ToolResult:
        self._checked: list[ApiRequest] = []
        self._edit: str | None = None
        self._out: list[str] = []
        self._err: list[str] = []
        try:
            parsed = parse(argv)
            self._ns = parsed.value("namespace") or self.cluster.namespace
            self._all_ns = parsed.flag("all_namespaces") if "all_namespaces" in parsed.opts else False
            code = getattr(self, "_cmd_" + parsed.command.replace("-", "_"))(parsed, stdin, edit_content) or 0
            return self._result(code)
        except Denied as exc:
            self._err.append(str(exc))
            return self._result(1, allowed=False, reason=str(exc))
        except (Failed, ClusterError) as exc:
            self._err.append(str(exc))
            return self._result(getattr(exc, "code", 1))

    def _result(self, code: int, allowed: bool = True, reason: str = "") -> ToolResult:
        text = lambda parts: "".join(p if p.endswith("\n") else p + "\n" for p in parts)  # noqa: E731
        return ToolResult(code, text(self._out), text(self._err), allowed,
                          reason or "; ".join(r.describe() for r in self._checked), self._edit)

    # -- authorisation -----------------------------------------------------------------------
    def _request(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> ApiRequest:
        namespace = "" if not rt.namespaced or (self._all_ns and not name) else self._ns
        return ApiRequest(verb, rt.group, rt.plural, sub, name, namespace)

    def need(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> None:
        request = self._request(verb, rt, name, sub)
        if not self.authz.allows(request):
            raise Denied(self.authz.forbidden(request))
        self._checked.append(request)

    def may(self, verb: str, rt: ResourceType, name: str = "", sub: str = "") -> bool:
        return self.authz.allows(self._request(verb, rt, name, sub))

    # -- objects -----------------------------------------------------------------------------
    def _local(self) -> bool:
        return self._all_ns or self._ns == self.cluster.namespace

    def objects(self, rt: ResourceType) -> list[dict[str, Any]]:
        if rt.plural == "namespaces":
            return self.cluster.objects("namespaces") or []
        if not self._local():
            return []
        modelled = self.cluster.objects(rt.plural)
        if modelled is not None:
            return modelled
        return [obj for obj in self.rbac_objects if obj.get("kind") == rt.kind]

    def object(self, rt: ResourceType, name: str) -> dict[str, Any]:
        found = [obj for obj in self.objects(rt) if obj["metadata"]["name"] == name]
        if not found:
            raise not_found(rt.plural, rt.group, name)
        return found[0]

    def _pod_of(self, rt: ResourceType, name: str) -> str:
        """The pod kubectl picks for `TYPE/NAME` (logs, exec): get the object, list its pods."""
        if rt.plural == "pods":
            self.need("get", PODS, name)
            self.object(PODS, name)
            return name
        if rt.plural not in (*WORKLOADS, "services", "replicasets"):
            raise Failed(f"error: cannot attach to *v1.{rt.kind}: selector for *v1.{rt.kind} not implemented")
        self.need("get", rt, name)
        obj = self.object(rt, name)
        self.need("list", PODS)
        component = (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component", "")
        return self.cluster.pod_name(component)

    # -- read commands -----------------------------------------------------------------------
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
                    items = [o for o in items if match_labels(p.value("selector") or "", o["metadata"].get("labels") or {})]
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
            if p.flag("prefix") or len(pods) > 1 and p.value("selector"):
                text = "".join(f"[pod/{pod}/{component}] {line}" for line in text.splitlines(keepends=True))
            self._out.append(text)
        return 0

    # -- write commands ----------------------------------------------------------------------
    def _one_target(self, args: Sequence[str]) -> tuple[ResourceType, str]:
        wanted = targets(args)
        if len(wanted) != 1 or wanted[0][1] is None:
            raise Failed("error: exactly one TYPE/NAME (for example deployment/spine-message) is required")
        rt, name = wanted[0]
        return rt, name or ""

    def _change(self, rt: ResourceType, name: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
        """Apply `change` to an object's current state; returns whether anything changed."""
        self.object(rt, name)  # NotFound, also in another namespace
        if rt.plural == "configmaps":
            current = self.cluster.configmap_object(name)
            new = change(copy.deepcopy(current))
            _same_identity(current, new)
            return self.cluster.write_configmap(name, new.get("data") or {})
        if rt.plural in WORKLOADS:
            w = self.cluster.workload(rt.plural, name)
            current = self.cluster.workload_object(w)
            new = change(copy.deepcopy(current))
            _same_identity(current, new)
            return self.cluster.change_workload(w, current, new) or new != current
        raise Failed(f"error: the local backend cannot change {rt.qualified}")

    def _cmd_patch(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        rt, name = self._one_target(p.args)
        text = p.value("patch")
        if text is None:
            raise Failed("error: must specify --patch or --patch-file containing the contents of the patch")
        if p.value("dry_run") not in (None, "none"):
            raise Failed("error: --dry-run is not supported by the brokered kubectl")
        sub = p.value("subresource") or ""
        self.need("patch", rt, name, sub)
        try:
            body = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise Failed(f"error: unable to parse \"{text}\": {exc}") from None
        patch_type = p.value("type", "strategic") or "strategic"
        try:
            changed = self._change(rt, name, lambda obj: apply_patch(obj, body, patch_type))
        except PatchError as exc:
            raise Failed(f"error: {exc}") from None
        kind = f"{rt.singular}.{rt.group}" if rt.group else rt.singular
        self._out.append(f"{kind}/{name} patched" + ("" if changed else " (no change)"))
        return 0

    def _cmd_edit(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        rt, name = self._one_target(p.args)
        self.need("get", rt, name)
        obj = self.object(rt, name)
        if edit is None:  # first round: hand the object to the caller's editor
            self._edit = yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)
            return 0
        self.need("patch", rt, name)
        try:
            new = yaml.safe_load(edit)
        except yaml.YAMLError as exc:
            raise Failed(f"error: the edited file is not valid YAML: {exc}") from None
        if not isinstance(new, dict):
            raise Failed("error: the edited file must hold one object")
        changed = self._change(rt, name, lambda _: new)
        kind = f"{rt.singular}.{rt.group}" if rt.group else rt.singular
        self._out.append(f"{kind}/{name} edited" if changed else "Edit cancelled, no changes made.")
        return 0

    def _cmd_set(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        if not p.args or p.args[0] not in ("env", "image"):
            raise Failed('error: the brokered kubectl supports "set env" and "set image"')
        what, rest = p.args[0], p.args[1:]
        split = 1 if rest and "/" in rest[0] else 2
        rt, name = self._one_target(rest[:split])
        pairs = rest[split:]
        if rt.plural not in WORKLOADS:
            raise Failed(f"error: the local backend sets {what} on deployments and statefulsets only")
        self.need("get", rt, name)
        self.object(rt, name)
        kind = f"{rt.singular}.{rt.group}"
        if what == "env" and p.flag("list"):
            w = self.cluster.workload(rt.plural, name)
            self._out.append(f"# {rt.kind} {name}, container {w.container}\n"
                             + "".join(f"{e['name']}={e.get('value', '')}\n" for e in w.env))
            return 0
        if what == "env":
            changes = env_changes([*p.values("env"), *pairs])
            self.need("patch", rt, name)
            container_name = p.value("container")

            def change(obj: dict[str, Any]) -> dict[str, Any]:
                for container in _containers(obj, container_name):
                    env = {e["name"]: e for e in container.get("env", [])}
                    for key, value in changes:
                        if value is None:
                            env.pop(key, None)
                        else:
                            env[key] = {"name": key, "value": value}
                    container["env"] = list(env.values())
                return obj
        else:
            images = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
            if not images or len(images) != len(pairs):
                raise Failed("error: at least one image update is required (CONTAINER=IMAGE)")
            self.need("patch", rt, name)

            def change(obj: dict[str, Any]) -> dict[str, Any]:
                containers = obj["spec"]["template"]["spec"]["containers"]
                for container_name, image in images.items():
                    chosen = containers if container_name == "*" else [c for c in containers if c["name"] == container_name]
                    if not chosen:
                        raise Failed(f'error: unable to find container named "{container_name}"')
                    for container in chosen:
                        container["image"] = image
                return obj
        changed = self._change(rt, name, change)
        if changed:
            self._out.append(f"{kind}/{name} {what} updated")
        return 0

    def _cmd_rollout(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        if not p.args or p.args[0] not in ("restart", "status", "history", "undo", "pause", "resume"):
            raise Failed("error: the brokered kubectl supports rollout restart, status and history")
        sub = p.args[0]
        rt, name = self._one_target(p.args[1:])
        if rt.plural not in WORKLOADS:
            raise Failed(f'error: no {sub} support for kind "{rt.kind}"')
        self.need("get", rt, name)
        self.object(rt, name)
        w = self.cluster.workload(rt.plural, name)
        kind = f"{rt.singular}.{rt.group}"
        if sub == "restart":
            self.need("patch", rt, name)
            self.cluster.restart_workload(w)
            self._out.append(f"{kind}/{name} restarted")
            return 0
        if sub == "history":
            self.need("list", resource_type("replicasets"))
            self._out.append(f"{kind}/{name} \nREVISION  CHANGE-CAUSE\n{w.revision}         <none>\n")
            return 0
        if sub != "status":
            raise Failed(f"error: rollout {sub} is not supported by the local backend")
        self.need("list", rt, name)
        self.need("watch", rt, name)
        deadline = time.monotonic() + min(duration_seconds(p.value("timeout"), self.max_wait), self.max_wait)
        waited = False
        while True:
            done, why = self.cluster.rollout_done(w)
            if done:
                self._out.append(f'{rt.singular} "{name}" successfully rolled out' if rt.plural == "deployments" else
                                 f"statefulset rolling update complete 1 pods at revision {name}-{w.revision}...")
                return 0
            if not waited:
                self._out.append(f'Waiting for {rt.singular} "{name}" rollout to finish: 0 of 1 updated replicas '
                                 f"are available...")
                waited = True
            if time.monotonic() > deadline:
                raise Failed(f"error: timed out waiting for the condition ({why})")
            time.sleep(0.2)

    def _cmd_scale(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        replicas = p.value("replicas")
        if replicas is None:
            raise Failed('error: required flag(s) "replicas" not set')
        rt, name = self._one_target(p.args)
        if rt.plural not in (*WORKLOADS, "replicasets"):
            raise Failed(f"error: cannot scale {rt.qualified}")
        self.need("get", rt, name)
        self.object(rt, name)
        self.need("patch", rt, name, "scale")
        if replicas != "1":
            raise Failed(f"error: the local backend runs exactly one replica of each workload; "
                         f"{rt.singular}.{rt.group}/{name} was not scaled to {replicas}")
        self._out.append(f"{rt.singular}.{rt.group}/{name} scaled")
        return 0

    def _cmd_exec(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        if not p.args:
            raise Failed("error: expected 'exec (POD | TYPE/NAME) [-c CONTAINER] [flags] -- COMMAND [args...]'.\n"
                         "POD or TYPE/NAME is a required argument for the exec command")
        command = p.after_dash if p.after_dash is not None else p.args[1:]
        if p.after_dash is None and command:
            self._err.append("kubectl exec [POD] [COMMAND] is DEPRECATED and will be removed in a future version. "
                             "Use kubectl exec [POD] -- [COMMAND] instead.")
        rt, name = targets(p.args[:1])[0] if "/" in p.args[0] else (PODS, p.args[0])
        pod = self._pod_of(rt, name or "")
        if rt.plural != "pods":
            self.need("get", PODS, pod)
        self.need("create", PODS, pod, "exec")
        component = self.cluster.pod_component(pod)
        if self.exec_into and component not in self.exec_into:
            raise Denied(f'Error from server (Forbidden): pods "{pod}" is forbidden: the access surface allows exec '
                         f"into {', '.join(self.exec_into)} only")
        container = p.value("container")
        if container and container != component:
            raise Failed(f'error: unable to upgrade connection: container {container} not found in pod {pod}')
        if not command:
            raise Failed("error: you must specify at least one command for the container")
        result = self.cluster.exec(pod, command, stdin if p.flag("stdin") else None, self.max_wait)
        self._out.append(result.stdout.decode(errors="replace"))
        self._err.append(result.stderr.decode(errors="replace"))
        if result.code:
            self._err.append(f"command terminated with exit code {result.code}")
        return result.code

    def _cmd_delete(self, p: Parsed, stdin: bytes | None, edit: str | None) -> int:
        wanted = targets(p.args)
        if not wanted:
            raise Failed("error: You must provide one or more resources by argument or filename.")
        names: list[tuple[ResourceType, str]] = []
        for rt, name in wanted:
            if name:
                names.append((rt, name))
                continue
            if not (p.value("selector") or p.flag("all")):
                raise Failed("error: resource(s) were provided, but no name was specified")
            self.need("list", rt)
            names += [(rt, o["metadata"]["name"]) for o in self.objects(rt)
                      if match_labels(p.value("selector") or "", o["metadata"].get("labels") or {})]
        if not names and not any(name for _, name in wanted):
            self._err.append(f"No resources found in {self._ns} namespace.")
        for rt, name in names:
            self.need("delete", rt, name)
            try:
                self.object(rt, name)
            except ClusterError:
                if p.flag("ignore_not_found"):
                    continue
                raise
            if rt.plural != "pods":
                raise Failed(f"error: the local backend deletes pods only; {rt.qualified} \"{name}\" was kept")
            self.cluster.delete_pod(name)
            self._out.append(f'pod "{name}" deleted')
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


def _same_identity(current: dict[str, Any], new: dict[str, Any]) -> None:
    for key in ("kind", "apiVersion"):
        if new.get(key, current[key]) != current[key]:
            raise Failed(f"error: {key} cannot change (was {current[key]})")
    name = (new.get("metadata") or {}).get("name", current["metadata"]["name"])
    if name != current["metadata"]["name"]:
        raise Failed(f"error: metadata.name cannot change (was {current['metadata']['name']})")


def _containers(obj: dict[str, Any], name: str | None) -> list[dict[str, Any]]:
    containers = obj["spec"]["template"]["spec"]["containers"]
    chosen = [c for c in containers if name in (None, "*", c["name"])]
    if not chosen:
        raise Failed(f'error: unable to find container named "{name}"')
    return chosen
