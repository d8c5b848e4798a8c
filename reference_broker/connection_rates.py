"""How fast a broker takes new connections, as Kafka's ``ConnectionQuotas`` paces them (KIP-402, KIP-612).

- ``max.connection.creation.rate`` (broker-wide) and ``listener.name.<l>.max.connection.creation.rate``:
  every connection the listener's acceptor takes is recorded on the broker's and the listener's
  connection-accept rate first; over either bound the acceptor waits out the throttle time before it
  takes the connection (``waitForConnectionSlot``), so later connections on that listener queue behind
  it. The inter-broker listener is not counted against the broker-wide rate while the broker has other
  listeners (``protectedListener``), so clients cannot starve replication.
- the ``connection_creation_rate`` quota of an ``ip`` entity (or of the default ``ip`` entity) is
  recorded after that wait; over it the connection is not taken: it stays unread for the throttle time
  and is then closed (``recordIpConnectionMaybeThrottle``, ``ConnectionThrottledException``, the
  acceptor's ``DelayedCloseSocket``), and it is taken back from the address's, the listener's and the
  broker's rates (``updateListenerMetrics``) so a refused connection does not count.

Each throttle is ``QuotaUtils.boundedThrottleTime``, at most one quota window; the rates keep
``quota.window.num`` samples of ``quota.window.size.seconds`` (``rateQuotaMetricConfig``). An address's
rate is forgotten after an hour without connections (``ConnectionQuotaEntity.ipQuotaEntity``'s sensor
expiration). Sans I/O: every time is passed in; the server waits and closes."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field

from .cluster_metadata.client_quotas import IP, ClientQuotas
from .quotas import WindowedRate, throttle_time_ms

__all__ = ["ConnectionRates", "INT_MAX", "ip_connection_rate"]

INT_MAX = 2**31 - 1  # no limit: the configs' default and QuotaConfig.IP_CONNECTION_RATE_DEFAULT
CONNECTION_CREATION_RATE = "connection_creation_rate"
_IP_SENSOR_EXPIRY_MS = 3600 * 1000


def _canonical(host: str | None, resolve: Callable[[str], str | None]) -> str | None:
    """An address as Kafka compares them (``InetAddress``): IP literals normalised, names resolved."""
    if host is None:
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return resolve(host)


def ip_connection_rate(quotas: ClientQuotas, ip: str, resolve: Callable[[str], str | None]) -> int:
    """The connection creation rate an address may use (``connectionRateForIp``): its own ``ip``
    entity's, else the default ``ip`` entity's, else INT_MAX (no quota). The value is an int in Kafka
    (``ClientQuotaMetadataManager.handleIpQuota``: ``toInt``)."""
    own = default = None
    address = _canonical(ip, resolve)
    for entity, values in quotas.entities():
        if len(entity) != 1 or entity[0][0] != IP or CONNECTION_CREATION_RATE not in values:
            continue
        name = entity[0][1]
        if name is None:
            default = values[CONNECTION_CREATION_RATE]
        elif address is not None and _canonical(name, resolve) == address:
            own = values[CONNECTION_CREATION_RATE]
    value = own if own is not None else default
    return INT_MAX if value is None else int(min(max(value, 0.0), float(INT_MAX)))


@dataclass
class _IpRate:
    rate: WindowedRate
    last_ms: int


@dataclass
class ConnectionRates:
    broker_max: int = INT_MAX  # max.connection.creation.rate
    per_listener_max: dict[str, int] = field(default_factory=dict)
    samples: int = 11  # quota.window.num
    window_ms: int = 1000  # quota.window.size.seconds, in milliseconds
    _broker: WindowedRate | None = field(default=None, repr=False)
    _listeners: dict[str, WindowedRate] = field(default_factory=dict, repr=False)
    _ips: dict[str, _IpRate] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._broker = WindowedRate(self.samples, self.window_ms)

    def _listener(self, listener: str) -> WindowedRate:
        rate = self._listeners.get(listener)
        if rate is None:
            rate = self._listeners[listener] = WindowedRate(self.samples, self.window_ms)
        return rate

    def _recorded(self, rate: WindowedRate, bound: int, now_ms: int) -> int:
        rate.record(1, now_ms)
        return throttle_time_ms(rate, bound, now_ms, max_ms=self.window_ms)

    def accept_delay_ms(self, listener: str, *, protected: bool, now_ms: int) -> int:
        """Record a connection the listener's acceptor is about to take; how long it must wait first
        (``recordConnectionAndGetThrottleTimeMs``: the longer of the broker's and the listener's)."""
        broker = 0 if protected else self._recorded(self._broker, self.broker_max, now_ms)
        bound = self.per_listener_max.get(listener, INT_MAX)
        return max(broker, self._recorded(self._listener(listener), bound, now_ms))

    def ip_delay_ms(self, listener: str, ip: str, ip_max: int, *, protected: bool, now_ms: int) -> int:
        """Record a connection from ``ip`` against its quota ``ip_max`` (INT_MAX: none, nothing
        recorded); over it, how long to hold the connection before closing it, the connection taken
        back from every rate it was recorded on. 0: the connection may be taken."""
        if ip_max == INT_MAX:
            return 0
        self._forget_idle_addresses(now_ms)
        entry = self._ips.get(ip)
        if entry is None:
            entry = self._ips[ip] = _IpRate(WindowedRate(self.samples, self.window_ms), now_ms)
        entry.last_ms = now_ms
        throttle = self._recorded(entry.rate, ip_max, now_ms)
        if throttle > 0:
            entry.rate.record(-1, now_ms)
            if not protected:
                self._broker.record(-1, now_ms)
            self._listener(listener).record(-1, now_ms)
        return throttle

    def _forget_idle_addresses(self, now_ms: int) -> None:
        for ip in [ip for ip, entry in self._ips.items() if now_ms - entry.last_ms > _IP_SENSOR_EXPIRY_MS]:
            del self._ips[ip]
