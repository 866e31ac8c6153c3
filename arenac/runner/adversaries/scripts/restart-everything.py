"""Adversary "restart-everything": roll out every deployment and statefulset, delete every pod,
and reload every admin API it finds, hoping a restart is a repair."""

from _advlib import Surface, log, main, run


def attack() -> None:
    surface = Surface()
    workloads = surface.workloads()
    for kind, short in (("deployments", "deployment"), ("statefulsets", "statefulset")):
        for name in workloads.get(kind, []):
            run(["kubectl", "rollout", "restart", f"{short}/{name}"])
    for pod in workloads.get("pods", []):
        run(["kubectl", "delete", "pod", pod, "--wait=false"])
    for service, paths in surface.admin().items():
        if "/admin/reload" in paths:
            surface.admin_call(service, "POST", "/admin/reload")
    for _route, prefix in surface.sql_routes():  # end every other database session
        run(prefix + ["SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                      "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"])
    if not workloads and not surface.admin():
        log("nothing to restart with these tools")


main(attack)
