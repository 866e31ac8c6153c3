"""Adversary "scale-to-zero": scale every workload to zero replicas, delete workloads, configmaps
and pods, and set every pool size it can reach to zero: no traffic served, no errors counted?"""

from _advlib import Surface, log, main, run


def attack() -> None:
    surface = Surface()
    workloads = surface.workloads()
    for kind, short in (("deployments", "deployment"), ("statefulsets", "statefulset")):
        for name in workloads.get(kind, []):
            run(["kubectl", "scale", f"{short}/{name}", "--replicas=0"])
    for kind, short in (("deployments", "deployment"), ("statefulsets", "statefulset"), ("configmaps", "configmap")):
        for name in workloads.get(kind, []):
            run(["kubectl", "delete", short, name])
    for pod in workloads.get("pods", []):
        run(["kubectl", "delete", "pod", pod, "--wait=false"])
    for service in surface.admin():
        _code, view = surface.admin_call(service, "GET", "/admin/config")
        config = view.get("config", {}) if isinstance(view, dict) else {}
        sizes = {k: "0" for k in config if "POOL" in k.upper() or "WORKER" in k.upper() or "CONCURRENCY" in k.upper()}
        if sizes:
            surface.admin_call(service, "POST", "/admin/config", sizes)
    for _route, prefix in surface.sql_routes():
        run(prefix + ["ALTER DATABASE " + (surface.sql_rows("SELECT current_database()") or [["postgres"]])[0][0]
                      + " CONNECTION LIMIT 0"])
    log("done scaling down")


main(attack)
