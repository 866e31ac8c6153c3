"""The configuration vocabulary of spine: services, keys, events.

Contract: this module is the single list of every key a spine service reads, with its healthy
default, whether it may change while the process runs (`reloadable`) and how its value is
checked. The chart's values.yaml, the local stack, the services and the docs all derive from it
(tests/substrate/test_chart.py checks values.yaml against it). Pure data, no I/O, cheap to import.

Two kinds of keys:
- knobs: what a fault or an operator changes (pool sizes, sequencer mode, schedules...). They are
  written to the service's config file (the ConfigMap's data) and listed in the chart values.
- wiring: where the dependencies are (hosts, ports, URLs, secrets). They come from the
  environment that the local stack or the Deployment sets; they are never reloadable.
A `secret` key's value is never shown (admin API, logs); passwords inside URLs are masked by
`redact_text` wherever a value is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ServiceName = Literal["gateway", "auth", "channel", "message", "fanout", "maintenance"]
SERVICES: tuple[ServiceName, ...] = ("gateway", "auth", "channel", "message", "fanout", "maintenance")
DB_SERVICES: frozenset[str] = frozenset({"auth", "channel", "message", "fanout", "maintenance"})

HEALTHY_RELEASE = "1.4.2"
ENV_PREFIX = "SPINE_"

Kind = Literal["int", "float", "str", "enum", "list"]


REDACTED = "<redacted>"
# scheme://user:PASSWORD@host (Redis URLs, PostgreSQL DSNs): the password part
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")


def redact_text(text: str) -> str:
    """`text` with every password inside a URL or DSN replaced by REDACTED."""
    return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)


class ConfigError(ValueError):
    """A key or value the service does not accept; carries the key for the caller to report."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class KeySpec:
    """One configuration key: its healthy default and how a raw string value is checked."""

    name: str
    default: str
    reloadable: bool
    kind: Kind = "str"
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    knob: bool = True  # False: wiring, set by the environment, not part of the chart's config
    doc: str = ""
    secret: bool = False  # the value is a credential: shown as REDACTED

    def shown(self, value: str) -> str:
        """The value as the admin API may show it: secrets hidden, URL passwords masked."""
        return REDACTED if self.secret and value else redact_text(value)

    def check(self, raw: str) -> str:
        """Return the normalised value or raise ConfigError with a readable reason."""
        value = raw.strip()
        if self.kind in ("int", "float"):
            try:
                number = int(value) if self.kind == "int" else float(value)
            except ValueError:
                expected = "an integer" if self.kind == "int" else "a number"
                raise ConfigError(self.name, f"expected {expected}, got {raw!r}") from None
            if self.minimum is not None and number < self.minimum:
                raise ConfigError(self.name, f"must be >= {self.minimum:g}, got {raw!r}")
            return str(number)
        if self.kind == "enum" and value not in self.choices:
            raise ConfigError(self.name, f"must be one of {', '.join(self.choices)}, got {raw!r}")
        if self.kind == "list":
            return ",".join(item.strip() for item in value.split(",") if item.strip())
        return value


def _db_keys() -> tuple[KeySpec, ...]:
    return (
        KeySpec("DB_POOL_SIZE", "10", True, "int", minimum=1, doc="connections kept open in the pool"),
        KeySpec("DB_POOL_OVERFLOW", "5", True, "int", minimum=0, doc="extra connections opened under load"),
        KeySpec("DB_POOL_TIMEOUT_MS", "2000", True, "int", minimum=1, doc="wait for a free connection before 503"),
        KeySpec("DB_ROLE", "spine_app", True, doc="PostgreSQL role the service logs in as"),
        KeySpec("PG_HOST", "spine-postgres", False, knob=False),
        KeySpec("PG_PORT", "5432", False, "int", knob=False),
        KeySpec("PG_DATABASE", "spine", False, knob=False),
        KeySpec("PG_PASSFILE", "/etc/spine-secrets/pgpass", False, knob=False, doc="libpq passfile, one line per role"),
    )


_COMMON: tuple[KeySpec, ...] = (
    KeySpec("RELEASE", HEALTHY_RELEASE, False, doc="the code release this process runs (its image)"),
    KeySpec("TIME_SCALE", "1.0", True, "float", minimum=0.001, doc="multiplies every period and schedule"),
    KeySpec("EVENTS", "", True, "list", doc="comma list of admin events switched on at boot"),
)
_REDIS_URL = KeySpec("REDIS_URL", "redis://spine-redis:6379/0", False, knob=False)
# the services whose requests read the database (auth's login lookup, channel's message reads) hold
# that read while `read_consistency_strict` is on; the others have no such read and no such event
_STRICT_HOLD = KeySpec("READ_CONSISTENCY_HOLD_MS", "250", True, "int", minimum=0,
                       doc="hold applied to database reads while event read_consistency_strict is on")
_QUEUE = KeySpec("FANOUT_QUEUE", "spine:fanout", False, doc="Redis list the message service feeds")

_PER_SERVICE: dict[str, tuple[KeySpec, ...]] = {
    "gateway": (
        KeySpec("UPSTREAM_TIMEOUT_MS", "5000", True, "int", minimum=1, doc="gateway gives up on a backend (504)"),
        KeySpec("AUTH_SECRET", "spine-dev-secret", False, knob=False, secret=True),
        KeySpec("AUTH_URL", "http://spine-auth:8080", False, knob=False),
        KeySpec("CHANNEL_URL", "http://spine-channel:8080", False, knob=False),
        KeySpec("MESSAGE_URL", "http://spine-message:8080", False, knob=False),
    ),
    "auth": (
        *_db_keys(),
        _STRICT_HOLD,
        KeySpec("AUTH_SECRET", "spine-dev-secret", False, knob=False, secret=True),
    ),
    "channel": (*_db_keys(), _STRICT_HOLD, _REDIS_URL),
    "message": (
        *_db_keys(),
        KeySpec("SEQUENCER_MODE", "atomic", True, "enum", choices=("atomic", "rmw"),
                doc="atomic: row-locked counter; rmw: read-modify-write (duplicates under concurrency)"),
        _QUEUE,
        _REDIS_URL,
    ),
    "fanout": (
        *_db_keys(),
        _QUEUE,
        KeySpec("FANOUT_BATCH", "50", True, "int", minimum=1, doc="events taken from the queue per round"),
        _REDIS_URL,
        KeySpec("REDIS_FANOUT_URL", "redis://fanout@spine-redis:6379/0", False, knob=False,
                doc="the ACL user `fanout`, which pops the queue and writes inboxes"),
    ),
    "maintenance": (
        *_db_keys(),
        KeySpec("MAINT_PERIOD_S", "60", True, "float", minimum=0.01, doc="a window starts every period"),
        KeySpec("MAINT_OFFSET_S", "40", True, "float", minimum=0, doc="window start within the period"),
        KeySpec("MAINT_DURATION_S", "6", True, "float", minimum=0, doc="how long the window holds the sequencers"),
    ),
}

# Admin events each service knows; an unknown name is refused so that a typo is not a silent no-op.
EVENTS: dict[str, tuple[str, ...]] = {
    "gateway": (),
    "auth": ("read_consistency_strict",),
    "channel": ("read_consistency_strict",),
    "message": (),
    "fanout": (),
    "maintenance": (),
}


def keys_for(service: str) -> dict[str, KeySpec]:
    """Every key the service reads, by name."""
    if service not in _PER_SERVICE:
        raise ConfigError(service, f"unknown service; expected one of {', '.join(SERVICES)}")
    return {spec.name: spec for spec in (*_COMMON, *_PER_SERVICE[service])}


def knob_defaults(service: str) -> dict[str, str]:
    """The healthy knob values of a service, as its ConfigMap data carries them (RELEASE and
    TIME_SCALE excluded: the chart sets those from `release` and `timeScale`)."""
    return {
        name: spec.default
        for name, spec in keys_for(service).items()
        if spec.knob and name not in ("RELEASE", "TIME_SCALE")
    }
