"""Stage one of the generator: read Apache Kafka's JSON message definitions into a typed model that
checks itself (version ranges, nullability, tags, struct references), so the emitters can trust it."""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

from .versions import Versions

__all__ = [
    "FieldType",
    "FieldSpec",
    "StructSpec",
    "MessageSpec",
    "SpecError",
    "load_spec_dir",
    "parse_message",
    "snake_case",
]

PRIMITIVE_KINDS = ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid")
VARIABLE_KINDS = ("string", "bytes", "records")
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
# Names the generated classes already use for their own members.
_RESERVED = {"encode", "decode", "decode_lenient", "unknown_tagged_fields", "schema"}


class SpecError(ValueError):
    """A message definition that breaks the format's rules."""


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``; ``ISRNodes`` -> ``isr_nodes``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    if keyword.iskeyword(s) or s in _RESERVED:
        s += "_"
    return s


@dataclass(frozen=True, slots=True)
class FieldType:
    kind: str  # a primitive or variable kind, "array" or "struct"
    element: FieldType | None = None  # arrays
    struct_name: str | None = None  # structs

    @classmethod
    def parse(cls, text: str) -> FieldType:
        if text.startswith("[]"):
            return cls("array", element=cls.parse(text[2:]))
        if text in PRIMITIVE_KINDS or text in VARIABLE_KINDS:
            return cls(text)
        if text[:1].isupper():
            return cls("struct", struct_name=text)
        raise SpecError(f"unknown type {text!r}")

    @property
    def is_struct_like(self) -> bool:
        return self.kind == "struct" or (self.kind == "array" and self.element.kind == "struct")

    @property
    def can_be_null(self) -> bool:
        return self.kind in ("string", "bytes", "records", "array", "struct")

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.element}"
        return self.struct_name if self.kind == "struct" else self.kind


@dataclass(slots=True)
class FieldSpec:
    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: object  # a Python value: int, bool, float, str, None, or the markers below
    ignorable: bool
    map_key: bool
    entity_type: str | None
    flexible_versions: Versions | None  # a per-field override (only RequestHeader.ClientId has one)
    struct: StructSpec | None = None  # for struct and struct-array fields

    @property
    def attr(self) -> str:
        return snake_case(self.name)


# Default markers for values that are built fresh per instance.
EMPTY_LIST = "EMPTY_LIST"
NEW_STRUCT = "NEW_STRUCT"
ZERO_UUID = "ZERO_UUID"


@dataclass(slots=True)
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec]
    common: bool = False

    @property
    def has_tagged_fields(self) -> bool:
        return any(f.tag is not None for f in self.fields)


@dataclass(slots=True)
class MessageSpec:
    name: str
    type: str  # request, response, header, data, metadata
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    deprecated_versions: Versions
    struct: StructSpec
    structs: dict[str, StructSpec] = field(default_factory=dict)  # every nested struct by name

    @property
    def snake(self) -> str:
        return snake_case(self.name)


def strip_comments(text: str) -> str:
    """Drop ``//`` comments, leaving ``//`` inside JSON strings alone."""
    out = []
    for line in text.splitlines():
        in_string = False
        escaped = False
        for i, ch in enumerate(line):
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = not in_string
            elif ch == "/" and not in_string and line[i + 1 : i + 2] == "/":
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def load_spec_dir(path: str | Path) -> list[MessageSpec]:
    path = Path(path)
    files = sorted(path.glob("*.json"))
    if not files:
        raise SpecError(f"no message definitions (*.json) in {path}")
    specs = []
    for file in files:
        try:
            specs.append(parse_message(json.loads(strip_comments(file.read_text()))))
        except (SpecError, KeyError, ValueError) as exc:
            raise SpecError(f"{file.name}: {exc}") from exc
    return specs


def parse_message(doc: dict) -> MessageSpec:
    name = doc["name"]
    valid = Versions.parse(doc["validVersions"])
    flexible = Versions.parse(doc["flexibleVersions"])
    structs: dict[str, StructSpec] = {}
    pending: list[FieldSpec] = []
    for common in doc.get("commonStructs", []):
        _add_struct(
            structs,
            StructSpec(
                common["name"],
                Versions.parse(common["versions"]),
                _parse_fields(common["fields"], structs, pending, valid),
                common=True,
            ),
        )
    top = StructSpec(name, valid, _parse_fields(doc["fields"], structs, pending, valid))
    for f in pending:  # struct references resolved once every struct is known
        struct_name = f.type.struct_name or f.type.element.struct_name
        if struct_name not in structs:
            raise SpecError(f"field {f.name}: struct type {struct_name} is never defined")
        f.struct = structs[struct_name]
    message = MessageSpec(
        name=name,
        type=doc["type"],
        api_key=doc.get("apiKey"),
        valid_versions=valid,
        flexible_versions=flexible,
        listeners=tuple(doc.get("listeners", ())),
        latest_version_unstable=bool(doc.get("latestVersionUnstable", False)),
        deprecated_versions=Versions.parse(doc.get("deprecatedVersions", "none")),
        struct=top,
        structs=structs,
    )
    _validate(message)
    return message


def _add_struct(structs: dict[str, StructSpec], struct: StructSpec) -> None:
    if struct.name in structs:
        raise SpecError(f"struct {struct.name} is defined twice")
    structs[struct.name] = struct


def _parse_fields(docs, structs, pending, valid: Versions) -> list[FieldSpec]:
    fields = []
    for doc in docs:
        ftype = FieldType.parse(doc["type"])
        # A tagged-only field may leave out "versions": Kafka's generator takes its tagged versions.
        versions = Versions.parse(doc["versions"] if "versions" in doc else doc["taggedVersions"])
        f = FieldSpec(
            name=doc["name"],
            type=ftype,
            versions=versions,
            nullable_versions=Versions.parse(doc.get("nullableVersions", "none")),
            tagged_versions=Versions.parse(doc.get("taggedVersions", "none")),
            tag=int(doc["tag"]) if "tag" in doc else None,  # some files write tags as strings
            default=None,
            ignorable=bool(doc.get("ignorable", False)),
            map_key=bool(doc.get("mapKey", False)),
            entity_type=doc.get("entityType"),
            flexible_versions=Versions.parse(doc["flexibleVersions"]) if "flexibleVersions" in doc else None,
        )
        f.default = _parse_default(f, doc.get("default"))
        if ftype.is_struct_like:
            struct_name = ftype.struct_name or ftype.element.struct_name
            if "fields" in doc:
                _add_struct(
                    structs,
                    StructSpec(struct_name, versions, _parse_fields(doc["fields"], structs, pending, valid)),
                )
            pending.append(f)
        elif "fields" in doc:
            raise SpecError(f"field {f.name}: only struct types have fields")
        fields.append(f)
    return fields


def _parse_default(f: FieldSpec, raw) -> object:
    kind = f.type.kind
    if raw == "null":
        if not f.type.can_be_null:
            raise SpecError(f"field {f.name}: {kind} cannot default to null")
        if f.nullable_versions.empty:
            raise SpecError(f"field {f.name}: defaults to null but is never nullable")
        return None
    if kind in _INT_RANGES:
        value = 0 if raw is None or raw == "" else int(raw, 0) if isinstance(raw, str) else int(raw)
        lo, hi = _INT_RANGES[kind]
        if not lo <= value <= hi:
            raise SpecError(f"field {f.name}: default {raw!r} out of range for {kind}")
        return value
    if kind == "bool":
        if raw is None or isinstance(raw, bool):
            return bool(raw)
        if raw not in ("true", "false"):
            raise SpecError(f"field {f.name}: bad bool default {raw!r}")
        return raw == "true"
    if kind == "float64":
        return float(raw) if raw not in (None, "") else 0.0
    if kind == "string":
        return "" if raw is None else str(raw)
    if raw not in (None, ""):
        raise SpecError(f"field {f.name}: {kind} fields take no default but null")
    if kind == "bytes":
        return b""
    if kind == "records":
        return None  # Kafka's generated classes start records fields as null
    if kind == "uuid":
        return ZERO_UUID
    if kind == "array":
        return EMPTY_LIST
    return NEW_STRUCT


def _validate(message: MessageSpec) -> None:
    valid = message.valid_versions
    if valid.empty:
        raise SpecError("validVersions is empty")

    def check_struct(struct: StructSpec, path: str) -> None:
        tags: dict[int, str] = {}
        names: set[str] = set()
        for f in struct.fields:
            where = f"{path}.{f.name}"
            if f.attr in names:
                raise SpecError(f"{where}: duplicate field name")
            names.add(f.attr)
            if not f.nullable_versions.empty and not f.type.can_be_null:
                raise SpecError(f"{where}: {f.type} cannot be nullable")
            if f.tag is not None or not f.tagged_versions.empty:
                if f.tag is None or f.tagged_versions.empty:
                    raise SpecError(f"{where}: tagged fields need both tag and taggedVersions")
                if f.tag in tags:
                    raise SpecError(f"{where}: tag {f.tag} is also used by {tags[f.tag]}")
                tags[f.tag] = f.name
                tagged = f.tagged_versions.intersect(valid)
                if not tagged.empty and (message.flexible_versions.intersect(tagged) != tagged):
                    raise SpecError(f"{where}: tagged in versions {tagged} that are not flexible")
            if f.struct is not None:
                check_struct(f.struct, where)

    check_struct(message.struct, message.name)
