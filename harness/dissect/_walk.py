"""Facts read out of decoded messages by walking their schema (``_fields_``) at the decoded version, so
fields a version lacks (which hold their defaults) are never reported, nor are tagged fields at their
defaults (which are never on the wire)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["error_codes", "topic_names"]

_TOPIC_NAME = "topicName"


def _leaves(message: Any, version: int, wanted: Callable[[Any], bool]) -> Iterator[tuple[Any, Any]]:
    """``(field schema, value)`` of every non-struct field ``wanted`` selects, depth first in wire order."""
    for field in type(message)._fields_:
        if not field.present(version):
            continue
        value = getattr(message, field.attr)
        if field.struct is not None:
            if value is None:
                continue
            for item in value if field.is_array else (value,):
                yield from _leaves(item, version, wanted)
        elif wanted(field) and not _absent_tag(field, value, version):
            yield field, value


def _absent_tag(field, value: Any, version: int) -> bool:
    """A tagged field at its default: Kafka never writes those, so it was not on the wire."""
    return field.tag is not None and field.tagged(version) and value == field.default_value()


def _is_error_code(field) -> bool:
    return field.type == "int16" and (field.attr == "error_code" or field.attr.endswith("_error_code"))


def error_codes(message: Any, version: int) -> list[int]:
    """Every error code field of a decoded message, in wire order (zeros included)."""
    return [value for _, value in _leaves(message, version, _is_error_code)]


def _is_topic_name(field) -> bool:
    return field.entity_type == _TOPIC_NAME and field.element_type == "string"


def topic_names(message: Any, version: int) -> list[str]:
    """Every topic name a decoded message carries (fields of the spec's ``topicName`` entity type), in
    wire order, repeats kept."""
    names: list[str] = []
    for field, value in _leaves(message, version, _is_topic_name):
        if value is None:
            continue
        if field.is_array:
            names += [name for name in value if name is not None]
        else:
            names.append(value)
    return names
