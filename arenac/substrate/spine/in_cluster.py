"""Where a spine installed from its chart answers, seen from another namespace of the cluster.

Contract: `cluster_endpoints(namespace, credentials)` is the `Endpoints` of the spine chart installed
in `namespace` (library/substrates/spine/chart/): each object's Service by its DNS name
(`spine-<component>.<namespace>.svc`, ports 8080, 5432 and 6379, the database `spine`), and the
credentials of its two Secrets as their keys read (`credentials`: key -> value, the Secrets
`spine-credentials` and `spine-admin-credential` mounted as files, one per key):
`<role>-password` for every PostgreSQL role (its `_` spelt `-`), the Redis users' passwords out of
`users.acl` (`user NAME on >PASSWORD ...`), the admin credential from `token` (a value's surrounding
whitespace dropped: a file written by hand ends with a newline). A key missing or a
user missing from `users.acl` raises `EndpointsError`, naming them all. The stack's PIDs and data
directory are not the harness's to know on a cluster: empty. `CREDENTIAL_SECRETS` names, by Secret,
exactly the keys it reads (the driver's `cluster_credentials`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from arenac.substrate.interface import Endpoints, EndpointsError, SecretKeys
from spine_services.keys import SERVICES

DATABASE = "spine"
# PostgreSQL role -> its key in the Secret spine-credentials (chart: templates/secret.yaml)
PASSWORD_KEYS = {"postgres": "postgres-password", "spine_admin": "spine-admin-password",
                 "spine_app": "spine-app-password", "spine_operator": "spine-operator-password",
                 "spine_readonly": "spine-readonly-password"}
ACL_KEY = "users.acl"
TOKEN_KEY = "token"  # the Secret spine-admin-credential
REDIS_USERS = ("default", "fanout", "harness", "agent")
# what `cluster_endpoints` reads, by the chart's Secret (templates/secret.yaml): the runner copies
# exactly these keys for the harness pod (not `pgpass`, the URLs or `auth-secret`, which it never uses)
CREDENTIAL_SECRETS = (SecretKeys("spine-credentials", (*PASSWORD_KEYS.values(), ACL_KEY)),
                      SecretKeys("spine-admin-credential", (TOKEN_KEY,)))


def _host(component: str, namespace: str) -> str:
    return f"spine-{component}.{namespace}.svc"


def acl_passwords(acl: str) -> dict[str, str]:
    """user -> password, from the lines of a Redis ACL file (`user NAME on >PASSWORD rules...`)."""
    found = {}
    for line in acl.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "user":
            secret = next((w[1:] for w in words[2:] if w.startswith(">")), None)
            if secret is not None:
                found[words[1]] = secret
    return found


def cluster_endpoints(namespace: str, credentials: Mapping[str, str]) -> Endpoints:
    missing = [key for key in (*PASSWORD_KEYS.values(), ACL_KEY, TOKEN_KEY) if key not in credentials]
    redis_passwords = acl_passwords(credentials.get(ACL_KEY, ""))
    if ACL_KEY in credentials:
        missing += [f"{ACL_KEY}: user {user}" for user in REDIS_USERS if user not in redis_passwords]
    if missing:
        raise EndpointsError("the credentials lack " + ", ".join(missing)
                             + " (the Secrets spine-credentials and spine-admin-credential, mounted as files)")
    postgres = _host("postgres", namespace)
    redis_host = _host("redis", namespace)

    def dsn(role: str) -> str:
        password = quote(credentials[PASSWORD_KEYS[role]].strip(), safe="")
        return f"postgresql://{role}:{password}@{postgres}:5432/{DATABASE}"

    def redis_url(user: str) -> str:
        return f"redis://{user}:{quote(redis_passwords[user], safe='')}@{redis_host}:6379/0"

    services: dict[str, str] = {name: f"http://{_host(name, namespace)}:8080" for name in SERVICES}
    return Endpoints(gateway=services["gateway"], services=services,
                     postgres={role: dsn(role) for role in PASSWORD_KEYS}, postgres_dsn=dsn("spine_app"),
                     redis=redis_url("default"), redis_fanout=redis_url("fanout"), data_dir="", pids={},
                     admin_token=credentials[TOKEN_KEY].strip(), redis_harness=redis_url("harness"),
                     redis_agent=redis_url("agent"))
