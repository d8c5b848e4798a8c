"""ConfigDef's validators: each checks a parsed value and fails with Kafka's message.

``str()`` of a validator is the "Valid Values" text Kafka's documentation prints for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._errors import ConfigError
from ._values import java_string

__all__ = [
    "Validator",
    "Range",
    "at_least",
    "between",
    "ValidString",
    "ValidList",
    "KnownAuthorizer",
    "CaseInsensitiveValidString",
    "GzipLevel",
    "ThrottledReplicaList",
    "PeerAddressList",
    "peer_addresses",
]


class Validator:
    def check(self, name: str, value: object) -> None:
        raise NotImplementedError


def _fail(name: str, value: object, reason: str) -> ConfigError:
    return ConfigError(name, java_string(value), reason)


@dataclass(frozen=True)
class Range(Validator):
    """``ConfigDef.Range``: inclusive bounds, either of which may be open."""

    min: int | float | None = None
    max: int | float | None = None

    def check(self, name: str, value: object) -> None:
        if value is None:
            raise ConfigError(name, None, "Value must be non-null")
        if self.min is not None and value < self.min:
            raise _fail(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise _fail(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        low = "..." if self.min is None else str(self.min)
        if self.max is None:
            return f"[{low},...]"
        return f"[{low},...,{self.max}]" if self.min is not None else f"[...,{self.max}]"


def at_least(minimum: int | float) -> Range:
    return Range(min=minimum)


def between(minimum: int | float, maximum: int | float) -> Range:
    return Range(min=minimum, max=maximum)


@dataclass(frozen=True)
class ValidString(Validator):
    """``ConfigDef.ValidString``: one of a fixed, case-sensitive set."""

    values: tuple[str, ...]

    def check(self, name: str, value: object) -> None:
        if value not in self.values:
            raise _fail(name, value, "String must be one of: " + ", ".join(self.values))

    def __str__(self) -> str:
        return "[" + ", ".join(self.values) + "]"


@dataclass(frozen=True)
class KnownAuthorizer(Validator):
    """``authorizer.class.name``: empty (no authorizer) or Kafka's KRaft ``StandardAuthorizer``, the one
    authorizer the reference broker has (Kafka fails its start on a class it cannot load)."""

    standard: str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

    def check(self, name: str, value: object) -> None:
        if value not in ("", self.standard):
            raise _fail(name, value, f"the reference broker has no authorizer but {self.standard}")

    def __str__(self) -> str:
        return f"[, {self.standard}]"


@dataclass(frozen=True)
class ValidList(Validator):
    """``ConfigDef.ValidList``: every element one of a fixed set (the message names the bad element)."""

    values: tuple[str, ...]

    def check(self, name: str, value: object) -> None:
        for item in value:
            ValidString(self.values).check(name, item)

    def __str__(self) -> str:
        return str(ValidString(self.values))


@dataclass(frozen=True)
class CaseInsensitiveValidString(Validator):
    values: tuple[str, ...]

    def check(self, name: str, value: object) -> None:
        if value is None or str(value).upper() not in {v.upper() for v in self.values}:
            raise _fail(name, value, "String must be one of (case insensitive): " + ", ".join(self.values))

    def __str__(self) -> str:
        return "(case insensitive) [" + ", ".join(self.values) + "]"


@dataclass(frozen=True)
class GzipLevel(Validator):
    """``CompressionType.GZIP.levelValidator()``: 1..9 (Deflater's levels) or -1 for Deflater's default."""

    def check(self, name: str, value: object) -> None:
        if value is None:
            raise ConfigError(name, None, "Value must be non-null")
        if value > 9 or (value < 1 and value != -1):
            raise _fail(name, value, "Value must be between 1 and 9 or equal to -1")

    def __str__(self) -> str:
        return "[1,...,9] or -1"


_REPLICA = re.compile(r"([0-9]+:[0-9]+)?\Z")


@dataclass(frozen=True)
class ThrottledReplicaList(Validator):
    """``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs."""

    def check(self, name: str, value: object) -> None:
        proposed = [str(item).strip() for item in value]
        if not (all(_REPLICA.match(item) for item in proposed) or "".join(proposed) == "*"):
            raise _fail(
                name,
                value,
                f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


@dataclass(frozen=True)
class PeerAddressList(Validator):
    """kconform's ``ID=HOST:PORT`` entries (no Kafka counterpart): where this broker dials a peer. The
    message names the first bad entry: not ``ID=HOST:PORT``, a port out of range, or an id given twice."""

    def check(self, name: str, value: object) -> None:
        try:
            peer_addresses(value)
        except ValueError as exc:
            raise _fail(name, value, str(exc)) from None

    def __str__(self) -> str:
        return "a list of ID=HOST:PORT"


def peer_addresses(entries) -> dict[int, tuple[str, int]]:
    """``kconform.interbroker.addresses`` entries as broker id -> (host, port); ValueError naming the
    first entry that is not ``ID=HOST:PORT`` (port 1-65535) or names an id already given."""
    out: dict[int, tuple[str, int]] = {}
    for entry in entries or []:
        node, sep, address = str(entry).partition("=")
        host, colon, port = address.strip().rpartition(":")
        node = node.strip()
        if not (sep and node.isdigit() and colon and host and port.isdigit()):
            raise ValueError(f"entry {entry!r} is not ID=HOST:PORT")
        if not 0 < int(port) <= 65535:
            raise ValueError(f"entry {entry!r} has port {port}, not 1-65535")
        if int(node) in out:
            raise ValueError(f"entry {entry!r} names broker {int(node)} a second time")
        out[int(node)] = (host, int(port))
    return out
