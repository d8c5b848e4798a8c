"""A security setting as one listener sees it: ``listener.name.<listener>.<config>`` (and, for SASL,
``listener.name.<listener>.<mechanism>.<config>``) before the unprefixed broker setting, as Kafka's
``ListenerName.configPrefix`` / ``saslMechanismPrefix`` lookups do."""

from __future__ import annotations

__all__ = ["listener_value"]


def listener_value(config, listener: str, name: str, *, mechanism: str | None = None) -> str | None:
    """The raw string for ``name`` on ``listener`` (None when unset anywhere); ``config`` is a
    ``BrokerConfig``. Prefixed keys are not Kafka config names, so they sit among the supplied
    properties rather than the typed values."""
    supplied = {**config.static_props, **config.dynamic_default, **config.dynamic_broker}
    prefix = f"listener.name.{listener.lower()}."
    keys = ([f"{prefix}{mechanism.lower()}.{name}"] if mechanism else []) + [f"{prefix}{name}"]
    for key in keys:
        if key in supplied:
            return supplied[key]
    if name in supplied:
        return supplied[name]
    try:
        value = config[name]
    except KeyError:
        return None
    if value is None:
        return None
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
