"""SpineSpec: one deployment of spine, in the shape of the chart's values.

Contract: `SpineSpec` mirrors library/substrates/spine/chart/values.yaml path for path
(`timeScale`, `services.<name>.{replicas, release, config}`, `postgres.settings`,
`redis.{maxmemory, maxmemoryPolicy, appendonly, appendfsync, acl}`, `credentials.seed`), so an
overlay the compiler writes for the chart applies to the local stack unchanged:
`SpineSpec.from_values(overlay)` merges it onto the healthy defaults.
`SpineSpec().to_values()` is exactly the chart's default values (tests check it).
`with_sets(["message.DB_POOL_SIZE=4", ...])` applies the CLI's --set assignments.
Every way of building a spec (`from_values`, `with_sets`, `with_release`) raises `SpecError` for
an invalid one: a ValueError whose `problems` are one readable line per distinct problem (the path
and what is wrong, never pydantic's raw report). Redis values are checked here (`maxmemory` a
Redis size such as 256mb, `maxmemoryPolicy` one of Redis' policies, `appendonly` yes or no,
`appendfsync` always, everysec or no, `acl` extra rules per ACL user); PostgreSQL settings need the
server binary and are checked by `postgres.check_settings` before a stack starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arenac.substrate.interface import problems_of
from spine_services.keys import HEALTHY_RELEASE, SERVICES, ConfigError, keys_for, knob_defaults
from spine_services.releases import release

# what redis-server accepts for maxmemory (bytes, or k/kb/m/mb/g/gb; case-insensitive; 0 = no limit)
REDIS_SIZE = re.compile(r"^[0-9]+(b|k|kb|m|mb|g|gb)?$", re.IGNORECASE)
REDIS_FSYNC = ("always", "everysec", "no")
# the ACL users of spine's Redis (redis_local.REDIS_USERS, which imports the server's wheel)
REDIS_USERS = ("default", "fanout", "harness", "agent")
# the ConfigMap key that holds a user's extra ACL rules: acl-<user> (a `config(redis.KEY)` target
# cannot hold a dot)
ACL_KEY_PREFIX = "acl-"
REDIS_POLICIES = ("noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
                  "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")


class SpecError(ValueError):
    """An invalid spec: `problems` holds one readable line per distinct problem."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(dict.fromkeys(problems))  # distinct, in order
        super().__init__("\n".join(self.problems))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ImageSpec(_Model):
    repository: str = "ghcr.io/arenac/spine"
    pullPolicy: str = "IfNotPresent"


class ServiceSpec(_Model):
    replicas: int = Field(1, ge=0)
    release: str = HEALTHY_RELEASE
    config: dict[str, str] = Field(default_factory=dict)

    @field_validator("release")
    @classmethod
    def _known_release(cls, value: str) -> str:
        try:
            release(value)
        except ConfigError as exc:
            raise ValueError(exc.reason) from None
        return value

    @field_validator("config", mode="before")
    @classmethod
    def _as_strings(cls, value: Mapping[str, Any]) -> dict[str, str]:
        return {str(k): str(v) for k, v in value.items()}


class PostgresSpec(_Model):
    image: str = "postgres:18"
    settings: dict[str, str] = Field(default_factory=lambda: {"idle_in_transaction_session_timeout": "0"})


class RedisSpec(_Model):
    image: str = "redis:7"
    maxmemory: str = "256mb"
    maxmemoryPolicy: str = "noeviction"
    # "yes": an append-only file in Redis' directory keeps its data (the fan-out queue, the inboxes)
    # across a restart of Redis; "no" (healthy, the default): a restart starts it empty
    appendonly: str = "no"
    appendfsync: str = "everysec"
    # user -> ACL rules appended to that user's own at Redis' start (a config-layer ACL fault: a
    # restart keeps it); none by default
    acl: dict[str, str] = Field(default_factory=dict)

    @field_validator("appendonly", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> str:
        text = {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) else str(value)
        if text not in ("yes", "no"):
            raise ValueError(f"expected yes or no, got {text!r}")
        return text

    @field_validator("appendfsync")
    @classmethod
    def _fsync(cls, value: str) -> str:
        return _one_of(value, REDIS_FSYNC)

    @field_validator("acl")
    @classmethod
    def _acl_users(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(REDIS_USERS))
        if unknown:
            raise ValueError(f"unknown Redis user(s) {', '.join(unknown)}; known: {', '.join(REDIS_USERS)}")
        bad = [user for user, rules in value.items() if "\n" in rules or ">" in rules or "<" in rules]
        if bad:
            raise ValueError(f"the rules of {', '.join(bad)} may not set a password or span lines")
        return value

    def configmap(self) -> dict[str, str]:
        """The ConfigMap spine-redis-config's data, as the chart writes it: what Redis reads at each start."""
        return {"maxmemory": self.maxmemory, "maxmemoryPolicy": self.maxmemoryPolicy,
                "appendonly": self.appendonly, "appendfsync": self.appendfsync,
                **{ACL_KEY_PREFIX + user: rules for user, rules in sorted(self.acl.items())}}

    @field_validator("maxmemory", mode="before")
    @classmethod
    def _size(cls, value: object) -> str:
        text = str(value).strip()
        if not REDIS_SIZE.match(text):
            raise ValueError(f"expected a Redis size such as 256mb, 1gb or a number of bytes, got {text!r}")
        return text

    @field_validator("maxmemoryPolicy")
    @classmethod
    def _policy(cls, value: str) -> str:
        return _one_of(value, REDIS_POLICIES)


class CredentialsSpec(_Model):
    # Kubernetes only: passwords are sha256(seed/role). Empty: derived from namespace and release
    # name (predictable: fine for a dev cluster; the runner passes a random seed). The local stack
    # generates random passwords per data directory and ignores this.
    seed: str = ""


def _default_services() -> dict[str, ServiceSpec]:
    return {name: ServiceSpec(config=knob_defaults(name)) for name in SERVICES}


class SpineSpec(_Model):
    image: ImageSpec = Field(default_factory=ImageSpec)
    timeScale: str = "1.0"
    services: dict[str, ServiceSpec] = Field(default_factory=_default_services)
    postgres: PostgresSpec = Field(default_factory=PostgresSpec)
    redis: RedisSpec = Field(default_factory=RedisSpec)
    credentials: CredentialsSpec = Field(default_factory=CredentialsSpec)

    @field_validator("services")
    @classmethod
    def _known_services(cls, value: dict[str, ServiceSpec]) -> dict[str, ServiceSpec]:
        unknown = sorted(set(value) - set(SERVICES))
        if unknown:
            raise ValueError(f"unknown service(s) {', '.join(unknown)}; known: {', '.join(SERVICES)}")
        problems = []
        for name, spec in value.items():
            specs = keys_for(name)
            for key, raw in spec.config.items():
                where = f"services.{name}.config.{key}"
                if key in ("RELEASE", "TIME_SCALE"):
                    problems.append(f"{where} is set by `release` / `timeScale`")
                elif key not in specs:
                    problems.append(f"{where}: unknown key for service {name}")
                else:
                    try:
                        specs[key].check(raw)
                    except ConfigError as exc:
                        problems.append(f"{where}: {exc.reason}")
        if problems:
            raise ValueError("\n".join(problems))  # one line each: problems_of() splits them
        return value

    @field_validator("timeScale", mode="before")
    @classmethod
    def _scale(cls, value: object) -> str:
        try:
            return keys_for("gateway")["TIME_SCALE"].check(str(value))
        except ConfigError as exc:
            raise ValueError(exc.reason) from None

    @classmethod
    def from_values(cls, values: Mapping[str, Any] | None = None) -> SpineSpec:
        """The healthy defaults with `values` (a chart values overlay) merged over them."""
        return cls._checked(_merge(cls().to_values(), dict(values or {})))

    @classmethod
    def _checked(cls, values: Mapping[str, Any]) -> SpineSpec:
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SpecError(problems_of(exc)) from None

    def to_values(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def service_file(self, name: str) -> dict[str, str]:
        """What the service's config file (ConfigMap data) holds: knobs, RELEASE, TIME_SCALE."""
        spec = self.services[name]
        return {"RELEASE": spec.release, "TIME_SCALE": self.timeScale, **spec.config}

    def with_sets(self, assignments: Iterable[str]) -> SpineSpec:
        """Apply `SERVICE.KEY=VALUE`, `KEY=VALUE` (every service that has KEY),
        `redis.maxmemory=...`, `redis.maxmemoryPolicy=...`, `postgres.SETTING=...`, `timeScale=...`."""
        values = self.to_values()
        for assignment in assignments:
            target, sep, value = assignment.partition("=")
            if not sep:
                raise SpecError([f"{assignment!r}: expected KEY=VALUE"])
            scope, _, key = target.rpartition(".")
            if target == "timeScale" or (not scope and key == "TIME_SCALE"):
                values["timeScale"] = value
            elif scope == "redis":
                if key not in ("maxmemory", "maxmemoryPolicy", "appendonly", "appendfsync"):
                    raise SpecError([f"redis.{key}: unknown setting; expected redis.maxmemory, "
                                     "redis.maxmemoryPolicy, redis.appendonly or redis.appendfsync"])
                values["redis"][key] = value
            elif scope == "postgres":
                values["postgres"]["settings"][key] = value
            elif scope in SERVICES:
                values["services"][scope]["config"][key] = value
            elif not scope:
                owners = [name for name in SERVICES if key in keys_for(name)]
                if not owners:
                    raise SpecError([f"{key}: no spine service reads this key"])
                for name in owners:
                    values["services"][name]["config"][key] = value
            else:
                raise SpecError([(f"{target}: expected SERVICE.KEY, KEY, redis.KEY or postgres.SETTING "
                                  f"(services: {', '.join(SERVICES)})")])
        return SpineSpec._checked(values)

    def with_release(self, version: str, services: Iterable[str] = SERVICES) -> SpineSpec:
        """The spec with `version` as the release of `services` (all by default)."""
        names = list(services)
        unknown = [name for name in names if name not in SERVICES]
        if unknown:
            raise SpecError([f"{name}: unknown service; known: {', '.join(SERVICES)}" for name in unknown])
        try:
            release(version)  # once, not once per service
        except ConfigError as exc:
            raise SpecError([exc.reason]) from None
        values = self.to_values()
        for name in names:
            values["services"][name]["release"] = version
        return SpineSpec._checked(values)


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], dict(value))
        else:
            merged[key] = value
    return merged


def _one_of(value: str, allowed: tuple[str, ...]) -> str:
    """VALUE when it is one of ALLOWED, else the validator's message naming them."""
    if value not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}, got {value!r}")
    return value
