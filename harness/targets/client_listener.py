"""Securing the brokers a target starts, to match the clients' ``security.protocol``: the listener clients
use (named EXTERNAL on every kind, so ``listener.name.external.*`` settings mean the same on each) takes
that protocol, the brokers' own traffic stays on PLAINTEXT listeners, and a broker config (``--broker-
config``: key stores, ``sasl.enabled.mechanisms``, JAAS) secures it. kconform sets the listener layout
itself (``OWNED_LISTENER_SETTINGS``); the rest passes to the brokers by Kafka's names.

For the apache/kafka image the properties become environment variables as its start script reads them
(``KAFKA_`` then the name upper-cased with ``.`` as ``_``, ``_`` as ``__`` and ``-`` as ``___``), and the
files the ``*.location`` settings name are mounted read-only into the container."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .base import TargetError

__all__ = [
    "CLIENT_LISTENER",
    "OWNED_LISTENER_SETTINGS",
    "SECURITY_PROTOCOLS",
    "checked_broker_properties",
    "client_listener_settings",
    "container_security",
    "kafka_image_env",
]

CLIENT_LISTENER = "EXTERNAL"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
OWNED_LISTENER_SETTINGS = (
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "controller.listener.names",
)
_MOUNT_ROOT = PurePosixPath("/etc/kconform/security")


def checked_broker_properties(protocol: str, properties: dict[str, str], target: str) -> str:
    """The protocol upper-cased, or TargetError when it or the properties cannot secure a broker."""
    protocol = protocol.upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise TargetError(
            f"target {target}: security.protocol={protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    owned = sorted(set(OWNED_LISTENER_SETTINGS) & set(properties))
    if owned:
        raise TargetError(
            f"target {target}: kconform sets {', '.join(owned)} itself; leave them out of the broker config"
        )
    if protocol != "PLAINTEXT" and not properties:
        raise TargetError(
            f"target {target}: clients use {protocol}, so the brokers kconform starts need a broker config "
            "(--broker-config) that secures them: key stores, sasl.enabled.mechanisms, JAAS"
        )
    return protocol


def client_listener_settings(protocol: str, host: str, port: int, advertise: str | None) -> dict[str, str]:
    """A reference node's settings for clients on a ``protocol`` listener at ``host:port`` (advertised as
    ``advertise``), with the broker's own traffic on a PLAINTEXT listener named INTERNAL."""
    advertised = advertise or f"{host}:{port}"
    protocols = f"{CLIENT_LISTENER}:{protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    return {
        "listeners": f"{CLIENT_LISTENER}://{host}:{port},INTERNAL://{host}:0",
        "advertised.listeners": f"{CLIENT_LISTENER}://{advertised},INTERNAL://{host}:0",
        "listener.security.protocol.map": protocols,
        "inter.broker.listener.name": "INTERNAL",
    }


def kafka_image_env(properties: dict[str, str]) -> dict[str, str]:
    """The apache/kafka image's environment variables for broker properties."""
    return {
        "KAFKA_" + name.replace("_", "__").replace("-", "___").replace(".", "_").upper(): value
        for name, value in properties.items()
    }


def container_security(properties: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the properties with every ``*.location`` file at its path inside the container, the read-only
    mounts ``{host directory: container directory}`` that put it there); a file that is not there is a
    TargetError before any container starts."""
    rewritten, mounts = dict(properties), {}
    for name, value in properties.items():
        if not name.endswith(".location"):
            continue
        path = Path(value).expanduser()
        if not path.is_file():
            raise TargetError(f"broker config {name}={value}: no such file")
        directory = str(path.resolve().parent)
        inside = mounts.setdefault(directory, str(_MOUNT_ROOT / str(len(mounts))))
        rewritten[name] = str(PurePosixPath(inside) / path.name)
    return rewritten, mounts
