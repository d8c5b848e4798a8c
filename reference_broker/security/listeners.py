"""A node's listeners from its configuration, read and checked as ``KafkaConfig`` reads them.

``listeners`` names where the node accepts connections (``NAME://host:port``), the protocol map says
what each name speaks, ``advertised.listeners`` what the node tells clients (defaulting to the bound
listeners), and ``inter.broker.listener.name`` (or ``security.inter.broker.protocol``) which one the
brokers use among themselves. The messages are Kafka's (``CoreUtils.listenerListToEndPoints``,
``KafkaConfig.validateValues``), so an operator's mistake reads the same here as there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..config import ConfigError

__all__ = [
    "SECURITY_PROTOCOLS",
    "Listener",
    "ListenerSetup",
    "listener_setup",
    "parse_listener_list",
    "parse_protocol_map",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's wire ids (SecurityProtocol.id), as BrokerRegistration carries them
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True, slots=True)
class Listener:
    """One endpoint. ``host`` "" binds every interface (Kafka's null host)."""

    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ListenerSetup:
    """Everything a node needs to bind and advertise: ``bound`` in configuration order, the advertised
    broker listeners (controller listeners are never advertised to clients) and the inter-broker one."""

    bound: tuple[Listener, ...]
    advertised: tuple[Listener, ...]
    inter_broker: str
    controller_names: tuple[str, ...]
    advertised_given: bool = False  # advertised.listeners was set (else it follows what is bound)

    def by_name(self, name: str) -> Listener:
        return next(listener for listener in self.bound if listener.name == name)

    def with_bound_port(self, name: str, host: str, port: int) -> ListenerSetup:
        """After binding: the real address in both lists. Advertised listeners that follow the bound
        ones take it whole; a given one keeps its own, except that port 0 means the bound port."""
        bound = tuple(replace(li, host=host, port=port) if li.name == name else li for li in self.bound)
        advertised = tuple(
            li
            if li.name != name or (self.advertised_given and li.port != 0)
            else replace(li, host=li.host if self.advertised_given and li.host else host, port=port)
            for li in self.advertised
        )
        return replace(self, bound=bound, advertised=advertised)


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: NAME:PROTOCOL pairs, names upper-cased as Kafka does."""
    protocols: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip():
            raise ConfigError(
                f"Invalid value {value} for listener.security.protocol.map: expected NAME:PROTOCOL"
            )
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"Invalid value {value} for listener.security.protocol.map: No enum constant "
                f"org.apache.kafka.common.security.auth.SecurityProtocol.{protocol}"
            )
        protocols[name.strip().upper()] = protocol
    return protocols


def parse_listener_list(
    value: str, protocols: Mapping[str, str], *, config: str = "listeners"
) -> list[Listener]:
    """A comma-separated listener list, each name known to ``protocols``; names and ports distinct
    (port 0, an ephemeral port, may repeat)."""
    listeners = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise ConfigError(
                f"Invalid value {value} for {config}: Unable to parse {item} to a broker endpoint"
            )
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(f"Invalid value {value} for {config}: port {port} out of range in {item}")
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(f"No security protocol defined for listener {name}")
        listeners.append(Listener(name, host, port, protocol))
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise ConfigError(f"requirement failed: Each listener must have a different name, {config}: {value}")
    ports = [listener.port for listener in listeners if listener.port != 0]
    if config == "listeners" and len(set(ports)) != len(ports):
        raise ConfigError(f"requirement failed: Each listener must have a different port, {config}: {value}")
    return listeners


def listener_setup(config) -> ListenerSetup:
    """The listeners of a node with ``config`` (a ``BrokerConfig``), or ConfigError with Kafka's message."""
    protocols = parse_protocol_map(config["listener.security.protocol.map"] or "")
    bound = parse_listener_list(config["listeners"] or "", protocols)
    names = (config["controller.listener.names"] or "").split(",")
    controller_names = tuple(n.strip().upper() for n in names if n.strip())
    roles = set(config["process.roles"])
    given = config["advertised.listeners"]
    advertised = list(bound)
    if given:
        advertised = parse_listener_list(given, protocols, config="advertised.listeners")
    advertised = [listener for listener in advertised if listener.name not in controller_names]
    inter_broker = _inter_broker_name(config, protocols)
    if "broker" in roles:
        if not advertised:
            raise ConfigError("requirement failed: There must be at least one broker advertised listener.")
        advertised_names = [listener.name for listener in advertised]
        if inter_broker not in advertised_names:
            raise ConfigError(
                "requirement failed: inter.broker.listener.name must be a listener name defined in "
                "advertised.listeners. The valid options based on currently configured listeners are "
                + ",".join(advertised_names)
            )
        bound_names = {listener.name for listener in bound}
        if not set(advertised_names) <= bound_names:
            raise ConfigError(
                "requirement failed: advertised.listeners listener names must be equal to or a subset of "
                f"the ones defined in listeners. Found {','.join(advertised_names)}. The valid options based "
                f"on the current configuration are {','.join(sorted(bound_names))}"
            )
    if any(listener.host == "0.0.0.0" for listener in advertised):
        raise ConfigError(
            "requirement failed: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
            "Use a routable IP address."
        )
    return ListenerSetup(tuple(bound), tuple(advertised), inter_broker, controller_names, bool(given))


def _inter_broker_name(config, protocols: Mapping[str, str]) -> str:
    """``inter.broker.listener.name``, else the listener named after ``security.inter.broker.protocol``
    (``KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol``); the two may not both be set."""
    name = config["inter.broker.listener.name"]
    if name:
        if "security.inter.broker.protocol" in config.static_props:
            raise ConfigError(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
            )
        name = name.strip().upper()
        if name not in protocols:
            raise ConfigError(
                f"Listener with name {name} defined in inter.broker.listener.name not found in "
                "listener.security.protocol.map."
            )
        return name
    return str(config["security.inter.broker.protocol"]).upper()
