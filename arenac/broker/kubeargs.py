"""kubectl's command line: flags (pflag rules: `--x v`, `--x=v`, `-x v`, `-xv`, `-it`), commands,
and resource type names (plural, singular, short names, `TYPE.group`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from arenac.broker.outcome import Failed
from arenac.broker.rbac import RBAC_GROUP

ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
Spec = dict[str, tuple[str, bool]]  # flag -> (option key, takes a value)


def _flags(*entries: tuple[str, str, bool]) -> Spec:
    spec: Spec = {}
    for names, key, takes in entries:
        for name in names.split("|"):
            spec[name] = (key, takes)
    return spec


GLOBAL = _flags(
    ("-n|--namespace", "namespace", True), ("-A|--all-namespaces", "all_namespaces", False),
    ("--context", "context", True), ("--cluster", "cluster", True), ("--user", "user", True),
    ("--kubeconfig", "kubeconfig", True), ("-v|--v", "verbosity", True), ("--request-timeout", "request_timeout", True),
)
OUTPUT = ("-o|--output", "output", True)
SELECTOR = ("-l|--selector", "selector", True)
COMMANDS: dict[str, Spec] = {
    "get": _flags(OUTPUT, SELECTOR, ("--field-selector", "field_selector", True), ("-w|--watch", "watch", False),
                  ("--show-labels", "show_labels", False), ("--no-headers", "no_headers", False),
                  ("--show-kind", "show_kind", False), ("--ignore-not-found", "ignore_not_found", False),
                  ("--sort-by", "sort_by", True), ("-L|--label-columns", "label_columns", True),
                  ("--chunk-size", "chunk_size", True)),
    "describe": _flags(SELECTOR, ("--show-events", "show_events", False)),
    "logs": _flags(("-c|--container", "container", True), ("--tail", "tail", True), ("-f|--follow", "follow", False),
                   ("-p|--previous", "previous", False), ("--timestamps", "timestamps", False), SELECTOR,
                   ("--all-containers", "all_containers", False), ("--since", "since", True),
                   ("--since-time", "since_time", True), ("--prefix", "prefix", False),
                   ("--limit-bytes", "limit_bytes", True), ("--max-log-requests", "max_log_requests", True)),
    "set": _flags(OUTPUT, ("-c|--containers", "container", True), ("-e|--env", "env", True),
                  ("--list", "list", False), ("--overwrite", "overwrite", False), ("--all", "all", False), SELECTOR),
    "patch": _flags(OUTPUT, ("-p|--patch", "patch", True), ("--type", "type", True),
                    ("--dry-run", "dry_run", False), ("--subresource", "subresource", True)),
    "edit": _flags(OUTPUT),
    "rollout": _flags(("--timeout", "timeout", True), ("-w|--watch", "watch", False), ("--revision", "revision", True)),
    "scale": _flags(("--replicas", "replicas", True), ("--current-replicas", "current_replicas", True),
                    ("--timeout", "timeout", True), OUTPUT),
    "exec": _flags(("-c|--container", "container", True), ("-i|--stdin", "stdin", False), ("-t|--tty", "tty", False),
                   ("-q|--quiet", "quiet", False), ("--pod-running-timeout", "pod_running_timeout", True)),
    "delete": _flags(SELECTOR, ("--all", "all", False), ("--grace-period", "grace_period", True),
                     ("--force", "force", False), ("--wait", "wait", False), ("--now", "now", False),
                     ("--ignore-not-found", "ignore_not_found", False), ("--timeout", "timeout", True),
                     ("--cascade", "cascade", True)),
    "auth": _flags(("--list", "list", False), ("--subresource", "subresource", True), ("-q|--quiet", "quiet", False),
                   ("--no-headers", "no_headers", False)),
    "version": _flags(OUTPUT, ("--client", "client", False), ("--short", "short", False)),
    "api-resources": _flags(OUTPUT, ("--namespaced", "namespaced", True), ("--api-group", "api_group", True),
                            ("--verbs", "verbs", True), ("--no-headers", "no_headers", False)),
}


@dataclass
class Parsed:
    command: str
    args: list[str] = field(default_factory=list)
    opts: dict[str, list[str]] = field(default_factory=dict)
    after_dash: list[str] | None = None  # the words after `--`

    def value(self, key: str, default: str | None = None) -> str | None:
        values = self.opts.get(key)
        return values[-1] if values else default

    def values(self, key: str) -> list[str]:
        return list(self.opts.get(key, []))

    def flag(self, key: str) -> bool:
        return self.value(key, "false") in ("true", "1", "")


def parse(argv: Sequence[str]) -> Parsed:
    words = list(argv)
    index = _command_index(words)
    if index is None:
        raise Failed("error: kubectl needs a command (get, describe, logs, set, patch, edit, rollout, scale, exec, "
                     "delete, auth, version, api-resources)")
    command = words[index]
    if command not in COMMANDS:
        raise Failed(f'error: unknown command "{command}" for "kubectl"\n'
                     f"(the brokered kubectl supports: {', '.join(COMMANDS)})")
    parsed = Parsed(command)
    _parse_flags(words[:index] + words[index + 1:], {**GLOBAL, **COMMANDS[command]}, parsed)
    return parsed


def _command_index(words: list[str]) -> int | None:
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            return i
        name = word.split("=", 1)[0]
        if name not in GLOBAL:
            raise Failed(f"error: unknown flag: {name}" if name.startswith("--") else
                         f"error: unknown shorthand flag: '{name[1:2]}' in {word}")
        i += 1 if "=" in word or not GLOBAL[name][1] else 2
    return None


def _parse_flags(words: list[str], spec: Spec, parsed: Parsed) -> None:
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            parsed.after_dash = words[i + 1:]
            return
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name not in spec:
                raise Failed(f"error: unknown flag: {name}\nSee 'kubectl {parsed.command} --help' for usage.")
            key, takes = spec[name]
            if takes and not eq:
                i += 1
                if i >= len(words):
                    raise Failed(f"error: flag needs an argument: {name}")
                value = words[i]
            parsed.opts.setdefault(key, []).append(value if (eq or takes) else "true")
        elif word.startswith("-") and len(word) > 1 and not word[1:].lstrip("-").isdigit():
            letters, j = word[1:], 0
            while j < len(letters):
                name = "-" + letters[j]
                if name not in spec:
                    raise Failed(f"error: unknown shorthand flag: '{letters[j]}' in {word}")
                key, takes = spec[name]
                if takes:
                    value = letters[j + 1:].removeprefix("=")
                    if not value:
                        i += 1
                        if i >= len(words):
                            raise Failed(f"error: flag needs an argument: '{letters[j]}' in {word}")
                        value = words[i]
                    parsed.opts.setdefault(key, []).append(value)
                    break
                parsed.opts.setdefault(key, []).append("true")
                j += 1
        else:
            parsed.args.append(word)
        i += 1


@dataclass(frozen=True)
class ResourceType:
    plural: str
    group: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/v1" if self.group else "v1"

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()


RESOURCE_TYPES = (
    ResourceType("pods", "", "Pod", True, ("po",)),
    ResourceType("configmaps", "", "ConfigMap", True, ("cm",)),
    ResourceType("services", "", "Service", True, ("svc",)),
    ResourceType("events", "", "Event", True, ("ev",)),
    ResourceType("secrets", "", "Secret", True),
    ResourceType("serviceaccounts", "", "ServiceAccount", True, ("sa",)),
    ResourceType("endpoints", "", "Endpoints", True, ("ep",)),
    ResourceType("persistentvolumeclaims", "", "PersistentVolumeClaim", True, ("pvc",)),
    ResourceType("namespaces", "", "Namespace", False, ("ns",)),
    ResourceType("nodes", "", "Node", False, ("no",)),
    ResourceType("deployments", "apps", "Deployment", True, ("deploy",)),
    ResourceType("statefulsets", "apps", "StatefulSet", True, ("sts",)),
    ResourceType("replicasets", "apps", "ReplicaSet", True, ("rs",)),
    ResourceType("daemonsets", "apps", "DaemonSet", True, ("ds",)),
    ResourceType("jobs", "batch", "Job", True),
    ResourceType("cronjobs", "batch", "CronJob", True, ("cj",)),
    ResourceType("roles", RBAC_GROUP, "Role", True),
    ResourceType("rolebindings", RBAC_GROUP, "RoleBinding", True),
    ResourceType("networkpolicies", "networking.k8s.io", "NetworkPolicy", True, ("netpol",)),
)


def resource_type(word: str) -> ResourceType:
    name, _, group = word.lower().partition(".")
    group = group.split(".", 1)[1] if group.startswith("v1.") else group  # deployments.v1.apps
    for rt in RESOURCE_TYPES:
        if name in (rt.plural, rt.singular, *rt.short) and (not group or group == rt.group):
            return rt
    raise Failed(f'error: the server doesn\'t have a resource type "{word}"')


def targets(args: Sequence[str]) -> list[tuple[ResourceType, str | None]]:
    """`TYPE[,TYPE] [NAME...]` or `TYPE/NAME...` -> [(type, name or None)]."""
    if not args:
        return []
    if "/" in args[0]:
        out: list[tuple[ResourceType, str | None]] = []
        for arg in args:
            kind, sep, name = arg.partition("/")
            if not sep or not name:
                raise Failed(f"error: arguments in resource/name form must have a single resource and name: {arg}")
            out.append((resource_type(kind), name))
        return out
    types = [resource_type(word) for word in args[0].split(",") if word]
    if len(args) == 1:
        return [(rt, None) for rt in types]
    if len(types) > 1:
        raise Failed("error: you must specify only one resource type when naming resources")
    return [(types[0], name) for name in args[1:]]


def match_labels(selector: str, labels: dict[str, str]) -> bool:
    """Equality- and set-based label selectors: `a=b,c!=d,e in (x,y),f notin (z),g,!h`."""
    for requirement in _split_selector(selector):
        requirement = requirement.strip()
        if not requirement:
            continue
        if " notin " in requirement or " in " in requirement:
            negate = " notin " in requirement
            key, _, values = requirement.partition(" notin " if negate else " in ")
            choices = {v.strip() for v in values.strip().strip("()").split(",")}
            present = labels.get(key.strip()) in choices
            if present == negate:
                return False
        elif "!=" in requirement:
            key, _, value = requirement.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in requirement:
            key, _, value = requirement.replace("==", "=").partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif requirement.startswith("!"):
            if requirement[1:].strip() in labels:
                return False
        elif requirement not in labels:
            return False
    return True


def _split_selector(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def duration_seconds(text: str | None, default: float) -> float:
    """Go durations as kubectl takes them (`120s`, `2m`, `1m30s`, `0` = no limit -> default)."""
    if not text:
        return default
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    i = 0
    while i < len(text):
        char = text[i]
        if char.isdigit() or char == ".":
            number += char
            i += 1
            continue
        unit = "ms" if text[i:i + 2] == "ms" else char
        if unit not in units or not number:
            raise Failed(f'error: invalid argument "{text}" for "--timeout" flag: time: invalid duration "{text}"')
        total += float(number) * units[unit]
        number, i = "", i + len(unit)
    if number and (total or number != "0"):
        raise Failed(f'error: invalid argument "{text}" for "--timeout" flag: time: missing unit in duration "{text}"')
    return total or default


def is_subresource(word: str) -> bool:
    return word in ("log", "exec", "scale", "status", "attach", "portforward", "proxy", "eviction",
                    "ephemeralcontainers")


def field_name(selector: str | None) -> str:
    if not selector:
        return ""
    for part in selector.split(","):
        key, _, value = part.replace("==", "=").partition("=")
        if key.strip() == "metadata.name":
            return value.strip()
        raise Failed(f'Error from server (BadRequest): Unable to find "{part}" field selector: '
                     "the local backend selects by metadata.name only")
    return ""


def env_changes(pairs: Sequence[str]) -> list[tuple[str, str | None]]:
    changes: list[tuple[str, str | None]] = []
    for pair in pairs:
        if "=" in pair:
            key, _, value = pair.partition("=")
            changes.append((key, value))
        elif pair.endswith("-"):
            changes.append((pair[:-1], None))
        else:
            raise Failed(f'error: environment variables must be of the form key=value or key-, not "{pair}"')
    if not changes:
        raise Failed("error: at least one environment variable must be provided")
    for key, _ in changes:
        if not ENV_NAME.match(key):
            raise Failed(f'error: invalid env var name "{key}": a valid environment variable name must consist of '
                         "alphabetic characters, digits, '_', '-', or '.', and must not start with a digit")
    return changes
