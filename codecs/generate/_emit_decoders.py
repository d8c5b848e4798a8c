"""The decoders of a message module: one straight-line function per layout, ``_dec_<layout>(buf,
pos) -> (struct, end)``. They fail fast (a bare marker such as ``_Short``, or whatever Python raises)
and leave saying which field and where to the interpreter."""

from __future__ import annotations

from ._message_code import FIXED, Code, ModuleNames, array_name
from .layout import ABSENT, REGULAR, TAGGED, FieldPlan, Layout
from .spec import MessageSpec

__all__ = ["DecoderEmitter"]


class DecoderEmitter:
    def __init__(self, code: Code, names: ModuleNames) -> None:
        self.code = code
        self.names = names

    def emit_decoder(self, message: MessageSpec, layout: Layout) -> None:
        c = self.code
        c(f"def _dec_{layout.label}(buf, pos):")
        with c.indent():
            c("blen = len(buf)")
            plans = layout.plans
            i = 0
            while i < len(plans):
                p = plans[i]
                if p.mode == REGULAR and p.field.type.kind in FIXED:
                    j = i
                    while j < len(plans) and plans[j].mode == REGULAR and plans[j].field.type.kind in FIXED:
                        j += 1
                    self.decode_fixed_run(plans[i:j])
                    i = j
                    continue
                if p.mode == REGULAR:
                    self.decode_value(message, p, f"f_{p.field.attr}", p.field.type)
                elif p.mode == ABSENT:
                    c(f"f_{p.field.attr} = {self.names.default_expr(message, p.field)}")
                i += 1
            tagged = [p for p in plans if p.mode == TAGGED]
            args = [f"f_{p.field.attr}" for p in plans]
            if layout.flexible:
                for p in tagged:
                    c(f"f_{p.field.attr} = {self.names.default_expr(message, p.field)}")
                c("unknown = ()")
                c("if buf[pos] == 0:  # no tagged fields: the common case")
                with c.indent():
                    c("pos += 1")
                c("else:")
                c.depth += 1
                c("ntags, pos = _uvarint(buf, pos)")
                c("unknown = []")
                c("for _ in range(ntags):")
                with c.indent():
                    c("tag, pos = _uvarint(buf, pos)")
                    c("size, pos = _uvarint(buf, pos)")
                    c("end = pos + size")
                    c("if size < 0 or end > blen:  # a size past 2**31 reads negative, as in Java")
                    with c.indent():
                        c("raise _Short")
                    keyword = "if"
                    for p in sorted(tagged, key=lambda p: p.field.tag):
                        c(f"{keyword} tag == {p.field.tag}:")
                        with c.indent():
                            self.decode_value(message, p, f"f_{p.field.attr}", p.field.type)
                            c("if pos != end:")
                            with c.indent():
                                c("raise _TagSize")
                        keyword = "elif"
                    if tagged:
                        c("else:")
                        with c.indent():
                            c("unknown.append((tag, bytes(buf[pos:end])))")
                            c("pos = end")
                    else:
                        c("unknown.append((tag, bytes(buf[pos:end])))")
                        c("pos = end")
                c("unknown = tuple(unknown)")
                c.depth -= 1
                args.append("unknown")
            elif not (message.flexible_versions.intersect(message.valid_versions).empty):
                args.append("()")
            c(f"return {self.names.alias(message, layout.struct)}({', '.join(args)}), pos")
        c()

    def read_uvarint(self, var: str) -> None:
        c = self.code
        c(f"{var} = buf[pos]")
        c(f"if {var} < 0x80:")
        with c.indent():
            c("pos += 1")
        c("else:")
        with c.indent():
            c(f"{var}, pos = _uvarint(buf, pos)")

    def decode_fixed_run(self, plans: list[FieldPlan]) -> None:
        c = self.code
        fmt = ">" + "".join(FIXED[p.field.type.kind][0] for p in plans)
        size = sum(FIXED[p.field.type.kind][1] for p in plans)
        names = [f"f_{p.field.attr}" for p in plans]
        const = self.names.struct_const(fmt)
        target = names[0] + "," if len(names) == 1 else ", ".join(names)
        c(f"{target} = {const}.unpack_from(buf, pos)")
        c(f"pos += {size}")
        for p in plans:
            if p.field.type.kind == "uuid":
                c(f"f_{p.field.attr} = _UUID(bytes=f_{p.field.attr})")

    def read_length(self, var: str, compact: bool, wide: bool) -> None:
        """Leaves ``var`` holding the length, negative for null."""
        c = self.code
        if compact:
            self.read_uvarint(var)
            c(f"{var} -= 1")
        elif wide:
            c(f"{var}, = _I32.unpack_from(buf, pos)")
            c("pos += 4")
        else:
            c(f"{var}, = _I16.unpack_from(buf, pos)")
            c("pos += 2")

    def decode_null_branch(self, p: FieldPlan, var: str, length: str) -> None:
        """Emit the ``if length < 0`` branch; the caller continues with the else branch."""
        c = self.code
        c(f"if {length} < 0:")
        with c.indent():
            if p.nullable:
                c(f"{var} = None")
            else:
                c("raise _NotNullable")
        c("else:")

    def _decode_variable(self, p: FieldPlan, var: str, kind: str, n: str, depth: int) -> None:
        c = self.code
        self.read_length(n, p.compact, wide=kind != "string")
        nullable_here = depth == 0
        if nullable_here:
            self.decode_null_branch(p, var, n)
        else:
            c(f"if {n} < 0:")
            with c.indent():
                c("raise _NotNullable")
            c("else:")
        with c.indent():
            if kind == "string":
                c(f"if {n} > 0x7FFF:")
                with c.indent():
                    c("raise _TooLong")
            c(f"end = pos + {n}")
            c("if end > blen:")
            with c.indent():
                c("raise _Short")
            if kind == "string":
                c(f"{var} = str(buf[pos:end], 'utf-8')")
            elif kind == "bytes":
                c(f"{var} = bytes(buf[pos:end])")
            else:
                c(f"{var} = buf[pos:end]")
            c("pos = end")

    def decode_value(self, message: MessageSpec, p: FieldPlan, var: str, ftype, depth: int = 0) -> None:
        c = self.code
        kind = ftype.kind
        if kind in FIXED:
            fmt, size = FIXED[kind]
            const = self.names.struct_const(">" + fmt)
            c(f"{var}, = {const}.unpack_from(buf, pos)")
            c(f"pos += {size}")
            if kind == "uuid":
                c(f"{var} = _UUID(bytes={var})")
            return
        n = f"n{depth}"
        if kind in ("string", "bytes", "records"):
            fast = p.compact and kind == "string"
            if fast:  # a short non-null compact string: one length byte
                c(f"{n} = buf[pos]")
                c(f"if 0 < {n} < 0x80:")
                with c.indent():
                    c(f"end = pos + {n}")
                    c("if end > blen:")
                    with c.indent():
                        c("raise _Short")
                    c(f"{var} = str(buf[pos + 1:end], 'utf-8')")
                    c("pos = end")
                c("else:")
                c.depth += 1
            self._decode_variable(p, var, kind, n, depth)
            if fast:
                c.depth -= 1
            return
        if kind == "struct":
            if p.nullable and depth == 0:
                c("marker, = _I8.unpack_from(buf, pos)")
                c("pos += 1")
                c("if marker < 0:")
                with c.indent():
                    c(f"{var} = None")
                c("else:")
                with c.indent():
                    c(f"{var}, pos = _dec_{p.child.label}(buf, pos)")
            else:
                c(f"{var}, pos = _dec_{p.child.label}(buf, pos)")
            return
        # arrays
        element = ftype.element
        fast = p.compact and element.kind in FIXED and element.kind != "uuid"
        if fast:  # up to 63 fixed-width elements: one length byte, one precompiled format
            fmt = FIXED[element.kind][0]
            c(f"{n} = buf[pos]")
            c(f"if 0 < {n} <= 64:")
            with c.indent():
                c(f"s = _CARRAY_{array_name(fmt)}[{n}]")
                c(f"{var} = list(s.unpack_from(buf, pos + 1))")
                c("pos += 1 + s.size")
            c("else:")
            c.depth += 1
        self._decode_array(message, p, var, element, n, depth)
        if fast:
            c.depth -= 1

    def _decode_array(
        self, message: MessageSpec, p: FieldPlan, var: str, element, n: str, depth: int
    ) -> None:
        c = self.code
        self.read_length(n, p.compact, wide=True)
        self.decode_null_branch(p, var, n)
        with c.indent():
            if element.kind in FIXED and element.kind != "uuid":
                fmt, size = FIXED[element.kind]
                c(f"if {n} * {size} > blen - pos:")
                with c.indent():
                    c("raise _Short")
                c(f"if {n} < 64:")
                with c.indent():
                    c(f"{var} = list(_ARRAY_{array_name(fmt)}[{n}].unpack_from(buf, pos))")
                c("else:")
                with c.indent():
                    c(f"{var} = list(_unpack_from('>%d{fmt}' % {n}, buf, pos))")
                c(f"pos += {n} * {size}")
                return
            c(f"if {n} > blen - pos:")
            with c.indent():
                c("raise _Short")
            c(f"{var} = []")
            c(f"for _ in range({n}):")
            with c.indent():
                if element.kind == "struct":
                    c(f"item, pos = _dec_{p.child.label}(buf, pos)")
                else:
                    self.decode_value(message, p, "item", element, depth + 1)
                c(f"{var}.append(item)")
