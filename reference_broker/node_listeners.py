"""A broker node's listeners: binding each with its security, registering every advertised endpoint,
and answering with the endpoints of the listener a request came in on (Kafka's Metadata,
FindCoordinator and DescribeCluster all use ``request.context.listenerName``).

The inter-broker listener carries replication and transaction markers between brokers, and the
controller listener a broker's registration, heartbeats, metadata fetches and forwarded requests, each
over TLS and/or SASL as its protocol says (``inter_broker_security``, ``controller_security``: Kafka's
inter-broker and controller client channels)."""

from __future__ import annotations

from .config import BROKER_CONFIGS, BrokerConfig, ConfigError
from .connection_limits import ConnectionLimits, parse_ip_overrides
from .connection_rates import ConnectionRates
from .security.listener_security import listener_security
from .security.listeners import PROTOCOL_IDS, ListenerSetup, listener_setup
from .security.peer_security import PeerSecurity, controller_listener, peer_security

__all__ = ["NodeListeners", "checked_listener_setup", "controller_security", "inter_broker_security"]


def checked_listener_setup(config: BrokerConfig) -> ListenerSetup:
    """The node's listeners, read and checked (``listeners.listener_setup``)."""
    return listener_setup(config)


def inter_broker_security(config: BrokerConfig, setup: ListenerSetup) -> PeerSecurity | None:
    """How this broker dials the others' inter-broker listener (None for PLAINTEXT), or ConfigError
    at start when its TLS or SASL login cannot be set up."""
    if "broker" not in set(config["process.roles"]):
        return None
    inter = next(li for li in setup.advertised if li.name == setup.inter_broker)
    return peer_security(config, inter, config["sasl.mechanism.inter.broker.protocol"])


def controller_security(config: BrokerConfig) -> PeerSecurity | None:
    """How a broker dials the controller listener (None for PLAINTEXT): its settings, logging in with
    ``sasl.mechanism.controller.protocol``; or ConfigError at start."""
    mechanism = config["sasl.mechanism.controller.protocol"]
    return peer_security(config, controller_listener(config), mechanism, "sasl.mechanism.controller.protocol")


def connection_limits(config: BrokerConfig, setup: ListenerSetup) -> ConnectionLimits:
    """``max.connections``, ``max.connection.creation.rate`` (each also per listener),
    ``max.connections.per.ip`` and its overrides, and the quota windows the rates use. Only the broker
    listeners count: a combined node's controller listener has its own socket server in Kafka."""
    overrides = parse_ip_overrides(config["max.connections.per.ip.overrides"] or "")
    per_ip = int(config["max.connections.per.ip"])
    if per_ip == 0 and not overrides:
        raise ConfigError(
            "requirement failed: max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set."
        )
    names = [li.name for li in setup.bound if li.name not in setup.controller_names]
    rates = ConnectionRates(
        broker_max=int(config["max.connection.creation.rate"]),
        per_listener_max=_per_listener(config, names, "max.connection.creation.rate"),
        samples=int(config["quota.window.num"]),
        window_ms=int(config["quota.window.size.seconds"]) * 1000,
    )
    return ConnectionLimits(
        broker_max=int(config["max.connections"]),
        per_ip_max=per_ip,
        per_ip_overrides=overrides,
        per_listener_max=_per_listener(config, names, "max.connections"),
        inter_broker_listener=setup.inter_broker,
        listeners=len(names),
        rates=rates,
    )


def _per_listener(config: BrokerConfig, names: list[str], name: str) -> dict[str, int]:
    """Each listener's value of ``name``: its ``listener.name.<l>.`` setting, else the broker's own
    (``ListenerConnectionQuota`` is configured with ``valuesWithPrefixOverride``)."""
    values = {}
    for listener in names:
        key = f"listener.name.{listener.lower()}.{name}"
        raw = config.static_props.get(key)
        values[listener] = int(config[name]) if raw is None else int(BROKER_CONFIGS[name].parse(str(raw)))
    return values


class NodeListeners:
    """A mixin for ``BrokerNode``: ``config``, ``listeners`` (a ListenerSetup), ``server``, ``image``,
    ``clock``, ``dispatcher``, ``controller_node`` and ``_advertised`` (the ``--advertise`` override of
    the first listener)."""

    def prepare_listener_security(self) -> None:
        """Build every broker listener's TLS and SASL set-up now, so a setting that cannot be honoured
        stops the node before it binds anything (ConfigError)."""
        self._security = {
            listener.name: listener_security(
                self.config,
                listener,
                scram_credential=self._scram_credential,
                now_ms=self.clock.now_ms,
                serves=self.dispatcher.serves,
            )
            for listener in self.listeners.bound
            if listener.name not in self.listeners.controller_names
        }

    async def bind_listeners(self, host: str | None, port: int | None) -> tuple[str, int]:
        """Bind every broker listener (the controller's with the controller in a combined node);
        ``host``/``port`` given place the first broker listener there. Returns the first bound."""
        first = None
        for listener in self.listeners.bound:
            at_host, at_port = listener.host, listener.port
            if first is None and host is not None and listener.name not in self.listeners.controller_names:
                at_host, at_port = host, port
            if listener.name in self.listeners.controller_names:
                if self.controller_node is None:
                    continue
                bound = await self.controller_node.start_listener(at_host or None, at_port)
            else:
                bound = await self.server.start(at_host, at_port, self._security[listener.name])
                first = first or bound
            self.listeners = self.listeners.with_bound_port(listener.name, _routable(bound[0]), bound[1])
        if first is None:
            raise ConfigError("no broker listener to bind (listeners names only controller listeners)")
        return first

    def _scram_credential(self, mechanism: str, user: str):
        lookup = getattr(self.image, "scram_credential", None)
        return None if lookup is None else lookup(mechanism, user)

    def registered_listeners(self) -> list[tuple[str, str, int, int]]:
        """(name, host, port, protocol id) of every advertised broker listener; ``--advertise``
        replaces the first one's address."""
        out = []
        for index, listener in enumerate(self.listeners.advertised):
            host, port = listener.host or "localhost", listener.port
            if index == 0 and self._advertised:
                host, port = self._advertised
            out.append((listener.name, host, port, PROTOCOL_IDS[listener.security_protocol]))
        return out

    @property
    def inter_broker_listener(self) -> str:
        return self.listeners.inter_broker

    def alive_brokers(self, listener: str | None = None) -> list[tuple[int, str, int, str | None]]:
        """(id, host, port, rack) of every unfenced broker with an endpoint on ``listener`` (the
        inter-broker listener by default), as ``KRaftMetadataCache.getAliveBrokerNodes``."""
        name = listener or self.inter_broker_listener
        out = []
        for broker in self.image.unfenced_brokers():
            endpoint = broker.endpoint(name)
            if endpoint is not None:
                out.append((broker.broker_id, endpoint.host, endpoint.port, broker.rack))
        return out

    def endpoint_of(self, broker_id: int, listener: str | None = None) -> tuple[str, int] | None:
        """A registered broker's address on ``listener`` (fenced or not, as Kafka's
        ``getAliveEndpoint`` looks it up)."""
        broker = self.image.brokers.get(broker_id)
        endpoint = None if broker is None else broker.endpoint(listener or self.inter_broker_listener)
        return None if endpoint is None else (endpoint.host, endpoint.port)


def _routable(host: str) -> str:
    return "localhost" if host in ("0.0.0.0", "::", "") else host
