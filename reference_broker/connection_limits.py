"""How many connections a broker takes, as Kafka's ``ConnectionQuotas`` counts them.

- ``max.connections`` (broker-wide) and ``listener.name.<l>.max.connections`` (per listener): a new
  connection past either waits until one closes, as Kafka's acceptor stops accepting; the
  inter-broker listener is exempt from the broker-wide limit while the broker has other listeners,
  so replication is never starved by clients;
- ``max.connections.per.ip`` with ``max.connections.per.ip.overrides`` (``host:count,...``): one past
  the limit is closed at once (``TooManyConnectionsException``);
- how fast connections may come (``rates``: ``connection_rates``), judged before the counts as
  ``ConnectionQuotas.inc`` does: the listener's and broker's rates before a slot is looked for, the
  address's rate before its count.

Sans I/O: ``admit`` decides, ``opened``/``closed`` keep the counts; the server waits and closes."""

from __future__ import annotations

import enum
import ipaddress
import socket
from dataclasses import dataclass, field

from .config import ConfigError
from .connection_rates import INT_MAX, ConnectionRates

__all__ = ["Admission", "ConnectionLimits", "parse_ip_overrides"]


class Admission(enum.Enum):
    ACCEPT = "accept"
    WAIT = "wait"  # no slot on the listener or the broker: try again when a connection closes
    REJECT = "reject"  # the address already has its maximum


def _address(host: str) -> str:
    """A host as the address Kafka compares (``InetAddress.getByName``), names resolved once."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        try:
            return socket.gethostbyname(host)
        except OSError:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve host {host}") from None


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, comma separated."""
    overrides = {}
    for item in (part.strip() for part in (value or "").split(",") if part.strip()):
        host, sep, count = item.rpartition(":")
        if not sep or not count.strip().isdigit():
            raise ConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: "
                              f"expected host:count, got {item}")  # fmt: skip
        overrides[_address(host.strip())] = int(count)
    return overrides


@dataclass
class ConnectionLimits:
    broker_max: int = INT_MAX
    per_ip_max: int = INT_MAX
    per_ip_overrides: dict[str, int] = field(default_factory=dict)
    per_listener_max: dict[str, int] = field(default_factory=dict)
    inter_broker_listener: str | None = None
    listeners: int = 1
    total: int = 0
    by_ip: dict[str, int] = field(default_factory=dict)
    by_listener: dict[str, int] = field(default_factory=dict)
    rates: ConnectionRates = field(default_factory=ConnectionRates)

    def protected(self, listener: str) -> bool:
        """``protectedListener``: the inter-broker listener, while the broker has others."""
        return listener == self.inter_broker_listener and self.listeners > 1

    def admit(self, listener: str, ip: str) -> Admission:
        if self.by_listener.get(listener, 0) >= self.per_listener_max.get(listener, INT_MAX):
            return Admission.WAIT
        if not self.protected(listener) and self.total >= self.broker_max:
            return Admission.WAIT
        if self.by_ip.get(ip, 0) >= self.per_ip_overrides.get(ip, self.per_ip_max):
            return Admission.REJECT
        return Admission.ACCEPT

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.per_ip_max)

    def opened(self, listener: str, ip: str) -> None:
        self.total += 1
        self.by_ip[ip] = self.by_ip.get(ip, 0) + 1
        self.by_listener[listener] = self.by_listener.get(listener, 0) + 1

    def closed(self, listener: str, ip: str) -> None:
        self.total = max(0, self.total - 1)
        left = self.by_ip.get(ip, 0) - 1
        if left > 0:
            self.by_ip[ip] = left
        else:
            self.by_ip.pop(ip, None)
        self.by_listener[listener] = max(0, self.by_listener.get(listener, 0) - 1)
