"""``sasl.jaas.config`` values: ``<LoginModule> <flag> key="value" ...;`` (Kafka's ``JaasConfig``).

A broker reads one login module per listener and mechanism from
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (``JaasContext.loadServerContext``); an
unprefixed ``sasl.jaas.config`` is ignored on a broker, with Kafka's warning."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from ..config import ConfigError

__all__ = ["LoginModule", "parse_jaas_config", "server_login_module"]

log = logging.getLogger(__name__)
# Words as Java's StreamTokenizer reads them with Kafka's extra word characters, quoted strings, and
# the two ordinary characters the grammar uses; comments are skipped.
_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|(?P<word>[A-Za-z0-9_.$-]+)|"(?P<dq>(?:[^"\\]|\\.)*)"|\'(?P<sq>(?:[^\'\\]|\\.)*)\'|(?P<op>[=;])',
    re.DOTALL,
)
_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ConfigError(f"JAAS config: unexpected character {text[position]!r} at {position}")
        position = match.end()
        kind = match.lastgroup
        if kind is None:
            continue
        value = match.group(kind)
        if kind in ("dq", "sq"):
            value = re.sub(r"\\(.)", r"\1", value)
            kind = "word"
        tokens.append((kind, value))
    return tokens


def parse_jaas_config(text: str) -> list[LoginModule]:
    """Every login module in ``text``, or ConfigError with Kafka's message."""
    tokens, modules, i = _tokens(text), [], 0
    while i < len(tokens):
        kind, class_name = tokens[i]
        if kind != "word":
            raise ConfigError("JAAS config: login module name expected")
        i += 1
        if i >= len(tokens):
            raise ConfigError("Login module control flag not specified in JAAS config")
        flag = tokens[i][1].upper()
        if tokens[i][0] != "word" or flag not in _FLAGS:
            raise ConfigError(f"Invalid login module control flag '{tokens[i][1]}' in JAAS config")
        i += 1
        options = {}
        while i < len(tokens) and tokens[i] != ("op", ";"):
            key = tokens[i][1]
            if (
                tokens[i][0] != "word"
                or i + 2 >= len(tokens) + 0
                or tokens[i + 1] != ("op", "=")
                or tokens[i + 2][0] != "word"
            ):
                raise ConfigError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError("JAAS config entry not terminated by semi-colon")
        i += 1
        modules.append(LoginModule(class_name, flag, options))
    if not modules:
        raise ConfigError("Login module not specified in JAAS config")
    return modules


def server_login_module(config, listener: str, mechanism: str) -> LoginModule:
    """The one login module a listener's mechanism is configured with, or ConfigError as Kafka fails."""
    supplied = {**config.static_props, **config.dynamic_default, **config.dynamic_broker}
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = supplied.get(key)
    if text is None:
        unprefixed = f"listener.name.{listener.lower()}.sasl.jaas.config"
        if supplied.get("sasl.jaas.config") or supplied.get(unprefixed):
            log.warning(
                "Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring it"
            )
        raise ConfigError(
            f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in the JAAS "
            f"configuration for {mechanism} on listener {listener}: set {key}"
        )
    modules = parse_jaas_config(text)
    if len(modules) != 1:
        raise ConfigError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]
