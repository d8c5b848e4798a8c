"""Settings the reference broker cannot honour, refused before a node starts.

A supplied static property (file or override) is refused when the broker does not implement it
(``_support.NOT_IMPLEMENTED``) and its parsed value differs from Kafka's default: set to its default it
changes nothing. ``listener.name.<listener>.<config>`` and ``listener.name.<listener>.<mechanism>.<config>``
count as the ``<config>`` they carry; a prefixed name Kafka would not read is left to the unknown-key
warning, as Kafka leaves it. Dynamic configs set later (IncrementalAlterConfigs) are not checked here.

Then the checks in ``VALUE_CHECKS`` refuse values of implemented properties the broker cannot honour;
append a function ``(config) -> iterable of Refusal`` to add one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ._broker import BrokerConfig
from ._definitions import BROKER_CONFIGS, ConfigType
from ._errors import ConfigError
from ._prefixes import carried_config
from ._support import NOT_IMPLEMENTED
from ._values import split_java_list

__all__ = [
    "Refusal",
    "UnsupportedConfigError",
    "VALUE_CHECKS",
    "carried_config",
    "check_supported",
    "refused_settings",
]

_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")  # SecurityProtocol


@dataclass(frozen=True, slots=True)
class Refusal:
    """One property the broker will not start with: ``key=shown: why``."""

    key: str
    shown: str
    why: str

    def __str__(self) -> str:
        return f"{self.key}={self.shown}: {self.why}"


class UnsupportedConfigError(ConfigError):
    """The configuration asks for what the reference broker does not do; names every such property."""

    def __init__(self, refusals: Iterable[Refusal]) -> None:
        self.refusals = tuple(refusals)
        super().__init__(None, None, "; ".join(str(refusal) for refusal in self.refusals))


def _shown(name: str, raw: str) -> str:
    return "[hidden]" if BROKER_CONFIGS[name].type is ConfigType.PASSWORD else raw


def _differs_from_default(name: str, raw: str) -> bool:
    definition = BROKER_CONFIGS[name]
    try:
        return definition.parse(raw) != definition.default
    except ConfigError:  # a prefixed value BrokerConfig did not parse: not the default either
        return True


def _not_implemented(config: BrokerConfig) -> Iterator[Refusal]:
    for key, raw in config.static_props.items():
        name = carried_config(key)
        if name in NOT_IMPLEMENTED and _differs_from_default(name, raw):
            why = f"not implemented by the reference broker ({NOT_IMPLEMENTED[name]})"
            yield Refusal(key, _shown(name, raw), why)


def one_log_directory(config: BrokerConfig) -> Iterator[Refusal]:
    """Every partition lives under the first directory (node.py): more than one would be JBOD."""
    if len(config.log_dirs) > 1:
        key = "log.dirs" if config["log.dirs"] is not None else "log.dir"
        why = "the reference broker keeps every log in one directory (several log directories: JBOD)"
        yield Refusal(key, str(config[key]), why)


def known_security_protocols(config: BrokerConfig) -> Iterator[Refusal]:
    """Each listener speaks one of the four protocols of Kafka's ``SecurityProtocol``; a malformed map is
    left to the listener checks, which give Kafka's own message."""
    raw = config["listener.security.protocol.map"] or ""
    for item in split_java_list(raw.strip()):
        name, sep, protocol = item.partition(":")
        if sep and protocol.strip().upper() not in _SECURITY_PROTOCOLS:
            why = (
                f"listener {name.strip()} speaks {protocol.strip()}, not one of "
                f"{', '.join(_SECURITY_PROTOCOLS)}"
            )
            yield Refusal("listener.security.protocol.map", raw, why)


# Checks of implemented properties whose value the broker cannot honour: add more here.
VALUE_CHECKS: list[Callable[[BrokerConfig], Iterable[Refusal]]] = [
    one_log_directory,
    known_security_protocols,
]


def refused_settings(config: BrokerConfig) -> list[Refusal]:
    """Every supplied setting the reference broker cannot honour, in the order supplied, then the checks'."""
    refusals = list(_not_implemented(config))
    for check in VALUE_CHECKS:
        refusals.extend(check(config))
    return refusals


def check_supported(config: BrokerConfig) -> None:
    """Raise UnsupportedConfigError naming every refused setting; nothing when there is none."""
    refusals = refused_settings(config)
    if refusals:
        raise UnsupportedConfigError(refusals)
