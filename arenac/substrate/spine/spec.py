"""SpineSpec: one deployment of spine, in the shape of the chart's values.

Contract: `SpineSpec` mirrors library/substrates/spine/chart/values.yaml path for path
(`timeScale`, `services.<name>.{replicas, release, config}`, `postgres.settings`,
`redis.{maxmemory, maxmemoryPolicy}`, `credentials.seed`), so an overlay the compiler writes for the chart applies to
the local stack unchanged: `SpineSpec.from_values(overlay)` merges it onto the healthy defaults.
`SpineSpec().to_values()` is exactly the chart's default values (tests check it).
`with_sets(["message.DB_POOL_SIZE=4", ...])` applies the CLI's --set assignments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arenac.substrate.spine.keys import HEALTHY_RELEASE, SERVICES, ConfigError, keys_for, knob_defaults
from arenac.substrate.spine.releases import release


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
        release(value)
        return value

    @field_validator("config", mode="before")
    @classmethod
    def _as_strings(cls, value: Mapping[str, Any]) -> dict[str, str]:
        return {str(k): str(v) for k, v in value.items()}


class PostgresSpec(_Model):
    image: str = "postgres:16"
    settings: dict[str, str] = Field(default_factory=lambda: {"idle_in_transaction_session_timeout": "0"})


class RedisSpec(_Model):
    image: str = "redis:7"
    maxmemory: str = "256mb"
    maxmemoryPolicy: str = "noeviction"


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
            raise ValueError(f"unknown service(s): {', '.join(unknown)}")
        for name, spec in value.items():
            specs = keys_for(name)
            for key, raw in spec.config.items():
                if key in ("RELEASE", "TIME_SCALE"):
                    raise ValueError(f"services.{name}.config: {key} is set by `release` / `timeScale`")
                if key not in specs:
                    raise ValueError(f"services.{name}.config: unknown key {key}")
                specs[key].check(raw)
        return value

    @field_validator("timeScale", mode="before")
    @classmethod
    def _scale(cls, value: object) -> str:
        return keys_for("gateway")["TIME_SCALE"].check(str(value))

    @classmethod
    def from_values(cls, values: Mapping[str, Any] | None = None) -> SpineSpec:
        """The healthy defaults with `values` (a chart values overlay) merged over them."""
        return cls.model_validate(_merge(cls().to_values(), dict(values or {})))

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
                raise ConfigError(assignment, "expected KEY=VALUE")
            scope, _, key = target.rpartition(".")
            if target == "timeScale" or (not scope and key == "TIME_SCALE"):
                values["timeScale"] = value
            elif scope == "redis":
                values["redis"][key] = value
            elif scope == "postgres":
                values["postgres"]["settings"][key] = value
            elif scope in SERVICES:
                values["services"][scope]["config"][key] = value
            elif not scope:
                owners = [name for name in SERVICES if key in keys_for(name)]
                if not owners:
                    raise ConfigError(key, "no spine service reads this key")
                for name in owners:
                    values["services"][name]["config"][key] = value
            else:
                raise ConfigError(target, "expected SERVICE.KEY, KEY, redis.KEY or postgres.SETTING")
        return SpineSpec.model_validate(values)

    def with_release(self, version: str, services: Iterable[str] = SERVICES) -> SpineSpec:
        values = self.to_values()
        for name in services:
            values["services"][name]["release"] = version
        return SpineSpec.model_validate(values)


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], dict(value))
        else:
            merged[key] = value
    return merged
