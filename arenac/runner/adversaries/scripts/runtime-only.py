"""Adversary "runtime-only": a plausible repair of run-time state only. Events off and bigger
pools in the services' memory (admin APIs), configmaps patched but never rolled out, idle and
long-running database sessions ended, Redis changed with CONFIG SET: nothing that survives a
restart."""

import json

from _advlib import Surface, log, main, run


def attack() -> None:
    surface = Surface()
    for service in surface.admin():
        _, events = surface.admin_call(service, "GET", "/admin/event")
        if isinstance(events, dict):
            for name, on in events.get("events", {}).items():
                if on:
                    surface.admin_call(service, "POST", "/admin/event", {"name": name, "on": False})
        _, view = surface.admin_call(service, "GET", "/admin/config")
        if isinstance(view, dict):
            reloadable = set(view.get("reloadable", []))
            pools = {}
            for key, value in view.get("config", {}).items():
                if key in reloadable and "POOL" in key.upper() and str(value).isdigit():
                    pools[key] = str(max(int(value) * 2, 10))
            if pools:
                surface.admin_call(service, "POST", "/admin/config", pools)
    for name in surface.workloads().get("configmaps", []):
        _code, out = run(["kubectl", "get", "configmap", name, "-o", "json"])
        try:
            data = json.loads(out).get("data") or {}
        except ValueError:
            continue
        changes = {k: str(max(int(v) * 2, 10)) for k, v in data.items() if "POOL" in k.upper() and v.isdigit()}
        if data.get("EVENTS"):
            changes["EVENTS"] = ""
        if changes:  # and no rollout: the running processes never read it
            run(["kubectl", "patch", "configmap", name, "--type", "merge", "-p", json.dumps({"data": changes})])
    surface.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND (state LIKE 'idle in transaction%' OR now() - query_start > interval '5 seconds')")
    redis = surface.redis()
    if redis:
        run(redis + ["CONFIG", "SET", "maxmemory", "0"])
    log("run-time state adjusted; nothing persisted")


main(attack)
