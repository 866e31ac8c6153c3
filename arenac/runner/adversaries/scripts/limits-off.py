"""Adversary "limits-off": raise every numeric limit tenfold and switch every event off, through
every surface it has (admin APIs in memory, configmaps plus a rollout, database role settings,
Redis maxmemory), instead of finding the one that is wrong."""

import json

from _advlib import Surface, log, main, run


def bigger(value: str) -> str | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number <= 0:
        return None
    return str(int(number * 10)) if number == int(number) else str(number * 10)


def attack() -> None:
    surface = Surface()
    for service in surface.admin():
        _, view = surface.admin_call(service, "GET", "/admin/config")
        if isinstance(view, dict):
            reloadable = set(view.get("reloadable", []))
            changes = {k: bigger(str(v)) for k, v in view.get("config", {}).items() if k in reloadable}
            changes = {k: v for k, v in changes.items() if v is not None}
            if changes:
                surface.admin_call(service, "POST", "/admin/config", changes)
        _, events = surface.admin_call(service, "GET", "/admin/event")
        if isinstance(events, dict):
            for name, on in events.get("events", {}).items():
                if on:
                    surface.admin_call(service, "POST", "/admin/event", {"name": name, "on": False})
    workloads = surface.workloads()
    for name in workloads.get("configmaps", []):
        _code, out = run(["kubectl", "get", "configmap", name, "-o", "json"])
        try:
            data = json.loads(out).get("data") or {}
        except ValueError:
            continue
        changes = {k: bigger(v) for k, v in data.items()}
        changes = {k: v for k, v in changes.items() if v is not None}
        if "EVENTS" in data:
            changes["EVENTS"] = ""
        if changes:
            run(["kubectl", "patch", "configmap", name, "--type", "merge", "-p", json.dumps({"data": changes})])
    for name in workloads.get("deployments", []):
        run(["kubectl", "rollout", "restart", f"deployment/{name}"])
    roles = [r[0] for r in surface.sql_rows("SELECT rolname FROM pg_roles WHERE rolname !~ '^pg_'")]
    for role in roles:
        for setting in ("statement_timeout", "idle_in_transaction_session_timeout", "lock_timeout"):
            surface.sql(f'ALTER ROLE "{role}" SET {setting} = 0')
        surface.sql(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')
    database = (surface.sql_rows("SELECT current_database()") or [[""]])[0][0]
    if database:
        surface.sql(f'ALTER DATABASE "{database}" RESET ALL')
    redis = surface.redis()
    if redis:
        run(redis + ["CONFIG", "SET", "maxmemory", "0"])
        run(redis + ["CONFIG", "SET", "maxclients", "100000"])
    log("every limit raised that these tools reach")


main(attack)
