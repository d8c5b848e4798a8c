"""Client configuration with the Java client's property names and Kafka 4.0's defaults.

``ProducerConfig({...})``, ``ConsumerConfig({...})`` and ``AdminConfig({...})`` take Python values or
the strings a properties file holds ("true", "16384", "range,cooperative-sticky"), check each against
its type and allowed values, and apply the Java client's cross-checks (idempotence needs acks=all,
retries and at most 5 requests in flight; a transactional id needs idempotence; delivery.timeout.ms
covers linger.ms plus request.timeout.ms). An unknown name is an error that suggests the nearest known
ones; the Java client only logs a warning there, but a test harness should not let a typo pass."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AdminConfig", "ClientConfigError", "ConsumerConfig", "ProducerConfig"]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class ClientConfigError(ValueError):
    """A setting the client cannot accept; the message names it and says what would do."""


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # int, long, bool, string, list, password
    default: Any
    check: Callable[[Any], str | None] | None = None  # a problem, or None


def at_least(low: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= low else f"must be at least {low}"


def between(low: int, high: int) -> Callable[[Any], str | None]:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


def one_of(*choices: str) -> Callable[[Any], str | None]:
    wanted = {c.lower() for c in choices}

    def check(value):
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if v is not None and str(v).lower() not in wanted]
        return f"must be one of {', '.join(choices)}" if bad else None

    return check


# SslConfigs and SaslConfigs; security.py turns them into a TLS context and SASL credentials. JKS stores
# are a Java format: PEM and PKCS12 are read here.
_SECURITY = [
    Setting("ssl.truststore.location", "string", None),
    Setting("ssl.truststore.type", "string", "JKS", one_of("JKS", "PKCS12", "PEM")),
    Setting("ssl.truststore.password", "password", None),
    Setting("ssl.truststore.certificates", "password", None),
    Setting("ssl.keystore.location", "string", None),
    Setting("ssl.keystore.type", "string", "JKS", one_of("JKS", "PKCS12", "PEM")),
    Setting("ssl.keystore.password", "password", None),
    Setting("ssl.key.password", "password", None),
    Setting("ssl.keystore.certificate.chain", "password", None),
    Setting("ssl.keystore.key", "password", None),
    Setting("ssl.endpoint.identification.algorithm", "string", "https"),
    Setting("sasl.mechanism", "string", "GSSAPI"),
    Setting("sasl.jaas.config", "password", None),
]

_COMMON = [
    Setting("bootstrap.servers", "list", []),
    Setting("client.id", "string", ""),
    Setting("client.rack", "string", ""),
    Setting("request.timeout.ms", "int", 30_000, at_least(0)),
    Setting("retry.backoff.ms", "long", 100, at_least(0)),
    Setting("retry.backoff.max.ms", "long", 1000, at_least(0)),
    Setting("reconnect.backoff.ms", "long", 50, at_least(0)),
    Setting("reconnect.backoff.max.ms", "long", 1000, at_least(0)),
    Setting("metadata.max.age.ms", "long", 300_000, at_least(0)),
    Setting("connections.max.idle.ms", "long", 540_000),
    Setting("socket.connection.setup.timeout.ms", "long", 10_000, at_least(0)),
    Setting("socket.connection.setup.timeout.max.ms", "long", 30_000, at_least(0)),
    Setting("send.buffer.bytes", "int", 131_072, at_least(-1)),
    Setting("receive.buffer.bytes", "int", 32_768, at_least(-1)),
    Setting(
        "security.protocol", "string", "PLAINTEXT", one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
    ),
    *_SECURITY,
    # kconform's own: the highest version to use per API ("JoinGroup=5,Fetch=12"), for brokers that
    # advertise a version they cannot serve (librdkafka's mock cluster closes the connection on the
    # JoinGroup v6 it advertises).
    Setting("kconform.api.version.max", "list", [], lambda v: _version_caps_problem(v)),
]

_PRODUCER = [
    Setting("acks", "string", "all", one_of("all", "-1", "0", "1")),
    Setting("batch.size", "int", 16_384, at_least(0)),
    Setting("linger.ms", "long", 5, at_least(0)),
    Setting("buffer.memory", "long", 33_554_432, at_least(0)),
    Setting("max.block.ms", "long", 60_000, at_least(0)),
    Setting("max.request.size", "int", 1_048_576, at_least(0)),
    Setting("compression.type", "string", "none", one_of("none", "gzip", "snappy", "lz4", "zstd")),
    Setting("compression.gzip.level", "int", -1, between(-1, 9)),
    Setting("compression.lz4.level", "int", 9, between(1, 17)),
    Setting("compression.zstd.level", "int", 3, between(-131_072, 22)),
    Setting("retries", "int", INT_MAX, at_least(0)),
    Setting("delivery.timeout.ms", "int", 120_000, at_least(0)),
    Setting("max.in.flight.requests.per.connection", "int", 5, at_least(1)),
    Setting("enable.idempotence", "bool", True),
    Setting("transactional.id", "string", None),
    Setting("transaction.timeout.ms", "int", 60_000),
    Setting("partitioner.class", "string", None),
    Setting("partitioner.ignore.keys", "bool", False),
    Setting("partitioner.adaptive.partitioning.enable", "bool", True),
    Setting("partitioner.availability.timeout.ms", "long", 0, at_least(0)),
    Setting("key.serializer", "string", None),
    Setting("value.serializer", "string", None),
    Setting("interceptor.classes", "list", []),
]

_CONSUMER = [
    Setting("group.id", "string", None),
    Setting("group.instance.id", "string", None),
    Setting("group.protocol", "string", "classic", one_of("classic", "consumer")),
    Setting("group.remote.assignor", "string", None),
    Setting("session.timeout.ms", "int", 45_000),
    Setting("heartbeat.interval.ms", "int", 3000),
    Setting("max.poll.interval.ms", "int", 300_000, at_least(1)),
    Setting("max.poll.records", "int", 500, at_least(1)),
    Setting("enable.auto.commit", "bool", True),
    Setting("auto.commit.interval.ms", "int", 5000, at_least(0)),
    Setting("auto.offset.reset", "string", "latest", one_of("latest", "earliest", "none")),
    Setting("isolation.level", "string", "read_uncommitted", one_of("read_uncommitted", "read_committed")),
    Setting("fetch.min.bytes", "int", 1, at_least(0)),
    Setting("fetch.max.bytes", "int", 52_428_800, at_least(0)),
    Setting("fetch.max.wait.ms", "int", 500, at_least(0)),
    Setting("max.partition.fetch.bytes", "int", 1_048_576, at_least(0)),
    Setting(
        "partition.assignment.strategy",
        "list",
        ["range", "cooperative-sticky"],
        one_of("range", "roundrobin", "sticky", "cooperative-sticky"),
    ),
    Setting("check.crcs", "bool", True),
    Setting("default.api.timeout.ms", "int", 60_000, at_least(0)),
    Setting("allow.auto.create.topics", "bool", True),
    Setting("exclude.internal.topics", "bool", True),
    Setting("key.deserializer", "string", None),
    Setting("value.deserializer", "string", None),
    Setting("interceptor.classes", "list", []),
]

_ADMIN = [Setting("default.api.timeout.ms", "int", 60_000, at_least(0))]


def parse_version_caps(entries: list[str]) -> dict[int, int]:
    """``["JoinGroup=5"]`` -> ``{11: 5}``; raises ClientConfigError naming the bad entry."""
    from kconform.codecs import api_schemas

    keys = {schema.name: schema.api_key for schema in api_schemas()}
    caps: dict[int, int] = {}
    for entry in entries:
        name, _, version = entry.partition("=")
        if name.strip() not in keys or not version.strip().isdigit():
            raise ClientConfigError(
                f"kconform.api.version.max: {entry!r} is not API=VERSION with a known API name "
                f"(e.g. JoinGroup=5)"
            )
        caps[keys[name.strip()]] = int(version)
    return caps


def _version_caps_problem(entries: list[str]) -> str | None:
    try:
        parse_version_caps(entries)
    except ClientConfigError as exc:
        return str(exc).partition(": ")[2]
    return None


def _parse(setting: Setting, value: Any) -> Any:
    kind = setting.kind
    if value is None:
        if setting.default is None or kind == "list":
            return [] if kind == "list" else None
        raise ClientConfigError(f"{setting.name} cannot be null")
    if kind in ("int", "long"):
        if isinstance(value, bool):
            raise ClientConfigError(f"{setting.name}: expected a number, got {value!r}")
        try:
            number = int(str(value).strip()) if isinstance(value, str) else int(value)
        except ValueError:
            raise ClientConfigError(f"{setting.name}: expected a whole number, got {value!r}") from None
        limit = INT_MAX if kind == "int" else LONG_MAX
        if not -limit - 1 <= number <= limit:
            raise ClientConfigError(f"{setting.name}: {number} does not fit in a Java {kind}")
        return number
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise ClientConfigError(f"{setting.name}: expected true or false, got {value!r}")
        return text == "true"
    if kind == "list":
        items = value.split(",") if isinstance(value, str) else list(value)
        return [str(item).strip() for item in items if str(item).strip()]
    return str(value)


class _ClientConfig(Mapping[str, Any]):
    _SETTINGS: tuple[Setting, ...] = ()

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        known = {s.name: s for s in self._SETTINGS}
        given = dict(values or {})
        self._explicit = set(given)
        self._values = {
            name: s.default if not isinstance(s.default, list) else list(s.default)
            for name, s in known.items()
        }
        for name, raw in given.items():
            setting = known.get(name)
            if setting is None:
                close = difflib.get_close_matches(name, known, n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise ClientConfigError(f"unknown {self._KIND} setting {name!r}{hint}")
            value = _parse(setting, raw)
            problem = setting.check(value) if setting.check is not None and value is not None else None
            if problem:
                raise ClientConfigError(f"invalid value {raw!r} for {name}: {problem}")
            self._values[name] = value
        self._cross_check()

    _KIND = "client"

    def _cross_check(self) -> None:
        pass

    def explicit(self, name: str) -> bool:
        return name in self._explicit

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class ProducerConfig(_ClientConfig):
    _SETTINGS = tuple(_COMMON + _PRODUCER)
    _KIND = "producer"

    def _cross_check(self) -> None:
        v = self._values
        acks_all = str(v["acks"]) in ("all", "-1")
        if v["enable.idempotence"]:
            problems = []
            if not acks_all:
                problems.append("acks must be all")
            if v["retries"] == 0:
                problems.append("retries must be greater than 0")
            if v["max.in.flight.requests.per.connection"] > 5:
                problems.append("max.in.flight.requests.per.connection must be at most 5")
            if problems and self.explicit("enable.idempotence"):
                raise ClientConfigError(f"enable.idempotence=true needs: {'; '.join(problems)}")
            if problems:  # idempotence was only the default: the Java client turns it off quietly
                v["enable.idempotence"] = False
        if v["transactional.id"] is not None and not v["enable.idempotence"]:
            raise ClientConfigError(
                "transactional.id needs enable.idempotence=true (and its acks/retries settings)"
            )
        floor = v["linger.ms"] + v["request.timeout.ms"]
        if v["delivery.timeout.ms"] < floor:
            if self.explicit("delivery.timeout.ms"):
                raise ClientConfigError(
                    f"delivery.timeout.ms must be at least linger.ms + request.timeout.ms ({floor})"
                )
            v["delivery.timeout.ms"] = floor  # as the Java client widens its default

    @property
    def acks(self) -> int:
        return -1 if str(self["acks"]) in ("all", "-1") else int(self["acks"])


class ConsumerConfig(_ClientConfig):
    _SETTINGS = tuple(_COMMON + _CONSUMER)
    _KIND = "consumer"

    def _cross_check(self) -> None:
        v = self._values
        if v["group.protocol"].lower() == "consumer":
            for name in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
                if self.explicit(name):
                    raise ClientConfigError(
                        f"{name} is a classic-protocol setting; "
                        "with group.protocol=consumer the broker decides it"
                    )
        elif v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ClientConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
        if v["group.id"] is None and v["enable.auto.commit"] and self.explicit("enable.auto.commit"):
            raise ClientConfigError("enable.auto.commit=true needs a group.id")


class AdminConfig(_ClientConfig):
    _SETTINGS = tuple(_COMMON + _ADMIN)
    _KIND = "admin"
