"""Listener- and mechanism-prefixed names (``listener.name.<listener>.[<mechanism>.]<config>``): which
broker config such a name sets, as Kafka reads them."""

from __future__ import annotations

from ._definitions import BROKER_CONFIGS
from ._support import PER_LISTENER, PER_MECHANISM

__all__ = ["carried_config"]

_LISTENER_PREFIX = "listener.name."


def carried_config(key: str) -> str | None:
    """The broker config ``key`` sets: itself when it is one, the ``<config>`` of a listener-prefixed name
    Kafka reads that way (``ListenerName.configPrefix``, ``saslMechanismConfigPrefix``: the mechanism in
    lower case), else None (a name Kafka does not know)."""
    if key in BROKER_CONFIGS:
        return key
    if not key.startswith(_LISTENER_PREFIX):
        return None
    _listener, dot, rest = key[len(_LISTENER_PREFIX) :].partition(".")
    if not dot:
        return None
    if rest in PER_LISTENER:
        return rest
    mechanism, dot, config = rest.partition(".")
    if dot and mechanism == mechanism.lower() and config in PER_MECHANISM:
        return config
    return None
