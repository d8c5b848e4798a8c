"""Config value types, parsed and printed the way Kafka's ``ConfigDef`` does it."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from enum import IntEnum

from ._errors import ConfigError

__all__ = [
    "ConfigType",
    "parse_value",
    "to_kafka_string",
    "java_string",
    "java_double_to_string",
    "java_trim",
    "split_java_list",
    "java_int",
]


class ConfigType(IntEnum):
    """``ConfigDef.Type``, numbered as DescribeConfigs v3+ reports it (``ConfigType`` of the response).."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


_BOUNDS = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
# Double.parseDouble without hexadecimal literals: a sign, then NaN, Infinity or a decimal with an optional
# exponent and an optional float/double suffix.
_DOUBLE = re.compile(
    r"([+-]?)(?:(NaN)|(Infinity)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?)\Z"
)
# ConfigDef's COMMA_WITH_WHITESPACE, "\\s*,\\s*", with Java's ASCII-only \s.
_COMMA_WITH_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\$[\w$]+)*\Z")


def java_trim(text: str) -> str:
    """``String.trim()``: strips every character up to and including U+0020 from both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_int(text: str) -> int | None:
    """``Integer.parseInt``, or None where it throws."""
    if not _INTEGER.match(text):
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None


def split_java_list(trimmed: str) -> list[str]:
    """How ConfigDef splits a LIST value: empty means no elements, else split on commas with whitespace."""
    return [] if trimmed == "" else _COMMA_WITH_WHITESPACE.split(trimmed)


def parse_value(name: str, config_type: ConfigType, raw: str) -> object:
    """``ConfigDef.parseType`` for a string value; errors carry Kafka's messages."""
    trimmed = java_trim(raw)
    if config_type is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise ConfigError(name, raw, "Expected value to be either true or false")
    if config_type in (ConfigType.STRING, ConfigType.PASSWORD):
        return trimmed
    if config_type in _BOUNDS:
        low, high = _BOUNDS[config_type]
        if _INTEGER.match(trimmed) and low <= int(trimmed) <= high:
            return int(trimmed)
        raise ConfigError(name, raw, f"Not a number of type {config_type.name}")
    if config_type is ConfigType.DOUBLE:
        return _parse_double(name, raw, trimmed)
    if config_type is ConfigType.LIST:
        return split_java_list(trimmed)
    if config_type is ConfigType.CLASS:
        # The JVM would load the class; the reference broker has none to load, so it checks the name's form.
        if _JAVA_CLASS_NAME.match(trimmed):
            return trimmed
        raise ConfigError(name, raw, f"Class {raw} could not be found.")
    raise ConfigError(name, raw, f"cannot parse a value of type {config_type.name}")


def _parse_double(name: str, raw: str, trimmed: str) -> float:
    match = _DOUBLE.match(trimmed)
    if match is None:
        raise ConfigError(name, raw, "Not a number of type DOUBLE")
    sign, nan, infinity, number = match.groups()
    if nan:
        return math.nan
    if infinity:
        return -math.inf if sign == "-" else math.inf
    return float(sign + number)


def to_kafka_string(value: object, config_type: ConfigType | None) -> str | None:
    """``ConfigDef.convertToString``: how DescribeConfigs and CreateTopics print a typed value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_to_string(value)
    if isinstance(value, list | tuple):
        return ",".join(to_kafka_string(item, None) or "null" for item in value)
    return str(value)


def java_string(value: object) -> str:
    """``String.valueOf`` of a parsed value, as Kafka prints it inside error messages."""
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_string(item) for item in value) + "]"
    return to_kafka_string(value, None) or "null"


def java_double_to_string(value: float) -> str:
    """``Double.toString``: plain notation for 10^-3 <= |x| < 10^7, otherwise ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    scientific = len(digits) - 1 + exponent
    if -3 <= scientific < 7:
        point = len(digits) + exponent
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{scientific}"
