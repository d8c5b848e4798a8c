"""What the message emitters share while they write one module: the line buffer, the names of the
module's struct constants and class aliases, and the wire facts of the fixed-width types."""

from __future__ import annotations

from .spec import EMPTY_LIST, NEW_STRUCT, ZERO_UUID, FieldSpec, MessageSpec, StructSpec

__all__ = ["FIXED", "Code", "ModuleNames", "array_name", "nested_in_order"]

# type -> (struct format, size in bytes)
FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}


class Code:
    """Lines of code at the current indent; ``with code.indent():`` opens a block."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append("    " * self.depth + line if line else "")

    def indent(self):
        code = self

        class _Block:
            def __enter__(self):
                code.depth += 1

            def __exit__(self, *exc):
                code.depth -= 1

        return _Block()


class ModuleNames:
    """The names one module's code refers to: a constant per struct format, an alias per class."""

    def __init__(self) -> None:
        self.structs: dict[str, str] = {}  # struct format -> module constant name
        self.class_alias: dict[tuple[str, str], str] = {}  # (message, struct) -> module alias

    def struct_const(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = self.structs[fmt] = f"_S{len(self.structs)}"
        return name

    def alias(self, message: MessageSpec, struct: StructSpec) -> str:
        return self.class_alias[(message.name, struct.name)]

    def qualname(self, message: MessageSpec, struct: StructSpec) -> str:
        return message.name if struct is message.struct else f"{message.name}.{struct.name}"

    def default_expr(self, message: MessageSpec, f: FieldSpec) -> str:
        """A fresh default value, for generated code."""
        d = f.default
        if d == EMPTY_LIST:
            return "[]"
        if d == NEW_STRUCT:
            return f"{self.alias(message, f.struct)}()"
        if d == ZERO_UUID:
            return "_ZERO_UUID"
        return repr(d)


def array_name(fmt: str) -> str:
    return "bool" if fmt == "?" else fmt


def nested_in_order(message: MessageSpec) -> list[StructSpec]:
    """Nested structs, each after the structs it contains (so annotations read inner to outer)."""
    seen: list[StructSpec] = []

    def visit(struct: StructSpec) -> None:
        for f in struct.fields:
            if f.struct is not None and f.struct not in seen:
                visit(f.struct)
                if f.struct not in seen:
                    seen.append(f.struct)

    visit(message.struct)
    return seen
