"""The brokered kubectl's write commands: patch, edit, set env|image, rollout, scale, exec and delete
(the API requests each sends: kubectl.py). Each change is made on the LocalCluster only after every
request it needs was allowed."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from arenac.broker.cluster import ClusterError
from arenac.broker.kubeargs import (
    Parsed,
    ResourceType,
    duration_seconds,
    env_changes,
    match_labels,
    resource_type,
    targets,
)
from arenac.broker.kubectl_session import PODS, WORKLOADS, KubectlSession
from arenac.broker.outcome import Denied, Failed
from arenac.broker.patch import PatchError, apply_patch


class WriteCommands(KubectlSession):
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
                    chosen = (containers if container_name == "*"
                              else [c for c in containers if c["name"] == container_name])
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
