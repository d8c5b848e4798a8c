"""The schema records every generated class carries, and the default markers they use.

Every engine reads these: the generated code is built from the same facts, the interpreter walks them
and the native codec compiles them. They sit below all three, so no engine imports another to learn
a message's layout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar
from uuid import UUID

__all__ = ["EMPTY_LIST", "NEW_STRUCT", "ZERO_UUID", "FieldSchema", "MessageSchema", "StructBase"]

ZERO_UUID = UUID(int=0)
EMPTY_LIST = "EMPTY_LIST"
NEW_STRUCT = "NEW_STRUCT"


@dataclass(frozen=True, slots=True)
class FieldSchema:
    """One field of a generated struct, as the message definition states it."""

    attr: str
    spec_name: str
    type: str  # as in the definitions: "int32", "[]string", "[]TopicData", "records" ...
    versions: tuple[int, int]
    nullable_versions: tuple[int, int] = (1, 0)
    tag: int | None = None
    tagged_versions: tuple[int, int] = (1, 0)
    flexible_versions: tuple[int, int] | None = None
    struct: Any = None
    default: Any = None
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def tagged(self, version: int) -> bool:
        return self.tagged_versions[0] <= version <= self.tagged_versions[1]

    def nullable(self, version: int) -> bool:
        return self.nullable_versions[0] <= version <= self.nullable_versions[1]

    def default_value(self) -> Any:
        if self.default == EMPTY_LIST:
            return []
        if self.default == NEW_STRUCT:
            return self.struct()
        return self.default


@dataclass(frozen=True, slots=True)
class MessageSchema:
    name: str
    type: str
    api_key: int | None
    valid_versions: tuple[int, int]
    flexible_versions: tuple[int, int]
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    deprecated_versions: tuple[int, int]

    @property
    def versions(self) -> range:
        return range(self.valid_versions[0], self.valid_versions[1] + 1)

    def flexible(self, version: int) -> bool:
        return self.flexible_versions[0] <= version <= self.flexible_versions[1]


class StructBase:
    """Base of every generated struct; ``_fields_`` lists its schema."""

    __slots__ = ()
    _fields_: ClassVar[tuple[FieldSchema, ...]] = ()
