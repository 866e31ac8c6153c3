"""The substrate descriptor: what a task may name on the live system.

Loaded from `library/substrates/<name>/substrate.yaml`. It lists services with their
config keys and healthy values, routes, queues, tables, sequences, database roles,
admin events, releases and the chart's location and object names.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from arenac.model.base import Model

# config keys the harness sets (the time scale, the service's wiring and database role): an agent
# changing one changes the experiment, not the substrate, so no `changes only` permits it
# (verify/scope.py), and a task's `healthy` block cannot set one (lower/healthy.py); so are every
# PG_* key and every *_URL key (where a service finds PostgreSQL, Redis and its peers)
HARNESS_OWNED_KEYS = frozenset({"TIME_SCALE", "DB_ROLE", "AUTH_SECRET"})


def harness_owned_key(key: str) -> bool:
    """A config key the harness sets (HARNESS_OWNED_KEYS, PG_*, *_URL)."""
    return key in HARNESS_OWNED_KEYS or key.startswith("PG_") or key.endswith("_URL")


class Service(Model):
    name: str
    kind: str = "app"  # app | datastore
    workload: str  # Deployment / StatefulSet name
    workload_kind: str = "Deployment"
    container: str
    configmap: str | None = None
    config: dict[str, str] = Field(default_factory=dict)  # healthy values
    reloadable: tuple[str, ...] = ()  # keys /admin/config can change at run time
    events: tuple[str, ...] = ()
    # event -> the routes whose requests it acts on (a template's `follows` parameter, lower/faults.py)
    event_routes: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    admin_paths: tuple[str, ...] = ()
    restartable: bool = True
    # a datastore whose run-time changes (Redis CONFIG SET, ACL SETUSER) only its own restart resets:
    # a repair made there is proven durable only by restarting it (validate.py, E0513)
    volatile: bool = False
    # a Redis datastore's ACL users, which snapshots record as `redis(acl.USER)` (lower/targets.py, E0214)
    acl_users: tuple[str, ...] = ()
    # a datastore that keeps its data across its own restart only under these ConfigMap settings
    # (Redis: {appendonly: "yes"}); empty: it always keeps it (PostgreSQL) or holds none. Read with
    # the healthy values (`config`, with a task's `healthy` settings over them: model/task.py
    # `TaskSpec.healthy_config`) by checks/queue_persistence.py (E0530) and checks/blind_restart.py
    keeps_data_when: dict[str, str] = Field(default_factory=dict)

    def keeps_data(self, config: dict[str, str] | None = None) -> bool:
        """Whether the datastore keeps its data across a restart under CONFIG (default: the
        descriptor's healthy values; a task's own are `TaskSpec.healthy_config(service)`)."""
        values = self.config if config is None else config
        return all(values.get(key) == value for key, value in self.keeps_data_when.items())


class Route(Model):
    name: str
    method: str
    path: str
    # TABLE.PRIVILEGE every request of the route needs of the application role: a template's route
    # parameter that `follows` a privilege parameter is a route that needs it (lower/faults.py)
    privileges: tuple[str, ...] = ()

    def needs(self, table: str, privilege: str) -> bool:
        return f"{table}.{privilege.upper()}" in self.privileges


class Queue(Model):
    name: str
    service: str  # the service that consumes it (its backlog is that service's to report)
    # the datastore that holds its events (a restart of it may lose them): `protect queue(Q) at
    # after_restart` needs a `survives restart` of it (lower/gates.py, E0529)
    datastore: str | None = None


class Job(Model):
    """A periodic job whose completed runs an episode samples (`runs(JOB)` in a gate), as its
    service counts them (the driver's `runs`)."""

    name: str
    service: str


class Table(Model):
    name: str
    key: tuple[str, ...]


class Sequence(Model):
    name: str  # table.column
    table: str
    column: str
    group_by: str


class Release(Model):
    name: str
    healthy: bool
    note: str = ""


class Substrate(Model):
    name: str
    chart: str  # directory relative to the substrate's library folder
    chart_name: str
    image_repository: str
    default_release: str
    services: tuple[Service, ...]
    routes: tuple[Route, ...]
    queues: tuple[Queue, ...]
    jobs: tuple[Job, ...] = ()
    tables: tuple[Table, ...]
    sequences: tuple[Sequence, ...]
    db_roles: dict[str, tuple[str, ...]]  # role -> roles whose rights it includes
    releases: tuple[Release, ...]
    settings: dict[str, str] = Field(default_factory=dict)  # datastore settings: postgres.X, redis.X

    @model_validator(mode="after")
    def _event_routes_are_known(self) -> Substrate:
        routes = {r.name for r in self.routes}
        for service in self.services:
            for event, acted_on in service.event_routes.items():
                if event not in service.events:
                    raise ValueError(f"service {service.name}: event_routes names '{event}', not one of its events")
                unknown = [r for r in acted_on if r not in routes]
                if unknown or not acted_on:
                    raise ValueError(f"service {service.name}: event '{event}' acts on unknown routes {unknown}")
        return self

    @model_validator(mode="after")
    def _route_privileges_on_tables(self) -> Substrate:
        tables = {t.name for t in self.tables}
        for route in self.routes:
            for item in route.privileges:
                table, _, privilege = item.partition(".")
                if table not in tables or not privilege.isalpha() or privilege != privilege.upper():
                    raise ValueError(f"route {route.name}: privilege '{item}' is not TABLE.PRIVILEGE on a table "
                                     "of the descriptor")
        return self

    def routes_needing(self, table: str, privilege: str) -> tuple[str, ...]:
        """The routes whose every request needs PRIVILEGE on TABLE, in the descriptor's order."""
        return tuple(route.name for route in self.routes if route.needs(table, privilege))

    @model_validator(mode="after")
    def _queues_in_datastores(self) -> Substrate:
        datastores = {s.name for s in self.services if s.kind == "datastore"}
        wrong = [f"{q.name} -> {q.datastore}" for q in self.queues
                 if q.datastore is not None and q.datastore not in datastores]
        if wrong:
            raise ValueError(f"a queue's datastore is not a datastore service of the descriptor: {', '.join(wrong)}")
        return self

    @property
    def redis_acl_users(self) -> tuple[str, ...]:
        """Every ACL user of the substrate's Redis datastores (`redis(acl.USER)`)."""
        return tuple(user for s in self.services if s.kind == "datastore" for user in s.acl_users)

    def service(self, name: str) -> Service | None:
        return next((s for s in self.services if s.name == name), None)

    def role_includes(self, granted: str, needed: str) -> bool:
        if granted == needed:
            return True
        return any(self.role_includes(inner, needed) for inner in self.db_roles.get(granted, ()))

    @property
    def event_names(self) -> dict[str, tuple[str, ...]]:
        """event -> the services that have it (an event name may be shared: `read_consistency_strict`)."""
        owners: dict[str, tuple[str, ...]] = {}
        for service in self.services:
            for event in service.events:
                owners[event] = (*owners.get(event, ()), service.name)
        return owners
