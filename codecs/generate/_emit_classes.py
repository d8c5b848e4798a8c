"""The class part of a message module: the dataclasses, then the schema each carries (its fields,
the message's versions, and the encoder and decoder of each version)."""

from __future__ import annotations

from ._message_code import Code, ModuleNames, nested_in_order
from .layout import LayoutTable
from .spec import EMPTY_LIST, NEW_STRUCT, ZERO_UUID, FieldSpec, MessageSpec, StructSpec

__all__ = ["ClassEmitter"]

_PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "uuid": "UUID",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes | memoryview",
}


class ClassEmitter:
    def __init__(self, code: Code, names: ModuleNames) -> None:
        self.code = code
        self.names = names

    def emit_classes(self, message: MessageSpec) -> None:
        c = self.code
        flexible = not message.flexible_versions.intersect(message.valid_versions).empty
        c("@dataclass(slots=True)")
        c(f"class {message.name}(_rt.Message):")
        with c.indent():
            for struct in nested_in_order(message):
                c("@dataclass(slots=True)")
                c(f"class {struct.name}(_rt.StructBase):")
                with c.indent():
                    self.emit_fields(message, struct, flexible)
                c()
            self.emit_fields(message, message.struct, flexible)
        c()
        for struct in [*nested_in_order(message), message.struct]:
            alias = f"_C_{message.name}" if struct is message.struct else f"_C_{message.name}_{struct.name}"
            self.names.class_alias[(message.name, struct.name)] = alias
            c(f"{alias} = {self.names.qualname(message, struct)}")
        c()

    def emit_fields(self, message: MessageSpec, struct: StructSpec, flexible: bool) -> None:
        c = self.code
        for f in struct.fields:
            c(f"{f.attr}: {self.py_type(message, f)} = {self.default_decl(message, f)}")
        if flexible:
            c("unknown_tagged_fields: tuple[tuple[int, bytes], ...] = field(default=(), repr=False)")
        if not struct.fields and not flexible:
            c("pass")

    def py_type(self, message: MessageSpec, f: FieldSpec) -> str:
        t = self.element_py_type(message, f, f.type)
        if not f.nullable_versions.empty and f.type.kind != "records":
            t += " | None"
        if f.type.kind == "records":
            t += " | None"
        return t

    def element_py_type(self, message: MessageSpec, f: FieldSpec, ftype) -> str:
        if ftype.kind == "array":
            return f"list[{self.element_py_type(message, f, ftype.element)}]"
        if ftype.kind == "struct":
            return self.names.qualname(message, f.struct)
        return _PY_TYPES[ftype.kind]

    def default_decl(self, message: MessageSpec, f: FieldSpec) -> str:
        d = f.default
        if d == EMPTY_LIST:
            return "field(default_factory=list)"
        if d == NEW_STRUCT:
            return f"field(default_factory=lambda: {self.names.qualname(message, f.struct)}())"
        if d == ZERO_UUID:
            return "_rt.ZERO_UUID"
        return repr(d)

    # ---- schema -------------------------------------------------------------------------------

    def emit_schema(self, message: MessageSpec, table: LayoutTable) -> None:
        c = self.code
        for struct in [*nested_in_order(message), message.struct]:
            alias = self.names.alias(message, struct)
            c(f"{alias}._fields_ = (")
            with c.indent():
                for f in struct.fields:
                    c(self.field_schema(message, f) + ",")
            c(")")
        c(f"_C_{message.name}._message_ = _rt.MessageSchema(")
        with c.indent():
            c(f"name={message.name!r},")
            c(f"type={message.type!r},")
            c(f"api_key={message.api_key!r},")
            c(f"valid_versions={message.valid_versions.as_tuple()!r},")
            c(f"flexible_versions={message.flexible_versions.as_tuple()!r},")
            c(f"listeners={message.listeners!r},")
            c(f"latest_version_unstable={message.latest_version_unstable!r},")
            c(f"deprecated_versions={message.deprecated_versions.as_tuple()!r},")
        c(")")
        enc = ", ".join(f"{v}: _enc_{layout.label}" for v, layout in table.top_by_version.items())
        dec = ", ".join(f"{v}: _dec_{layout.label}" for v, layout in table.top_by_version.items())
        c(f"_C_{message.name}._encoders_ = {{{enc}}}")
        c(f"_C_{message.name}._decoders_ = {{{dec}}}")
        c()

    def field_schema(self, message: MessageSpec, f: FieldSpec) -> str:
        parts = [
            repr(f.attr),
            repr(f.name),
            repr(str(f.type)),
            f"versions={f.versions.as_tuple()!r}",
        ]
        if not f.nullable_versions.empty:
            parts.append(f"nullable_versions={f.nullable_versions.as_tuple()!r}")
        if f.tag is not None:
            parts.append(f"tag={f.tag}, tagged_versions={f.tagged_versions.as_tuple()!r}")
        if f.flexible_versions is not None:
            parts.append(f"flexible_versions={f.flexible_versions.as_tuple()!r}")
        if f.struct is not None:
            parts.append(f"struct={self.names.qualname(message, f.struct)}")
        if f.default not in (EMPTY_LIST, NEW_STRUCT, ZERO_UUID):
            parts.append(f"default={f.default!r}")
        else:
            parts.append(f"default=_rt.{f.default}")
        if f.ignorable:
            parts.append("ignorable=True")
        if f.map_key:
            parts.append("map_key=True")
        if f.entity_type:
            parts.append(f"entity_type={f.entity_type!r}")
        return f"_rt.FieldSchema({', '.join(parts)})"
