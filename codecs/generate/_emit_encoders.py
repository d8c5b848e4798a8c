"""The encoders of a message module: one straight-line function per layout, ``_enc_<layout>(out,
o)``, that appends the struct's bytes to ``out``. They fail fast (a bare marker such as
``_NonDefault``, or whatever Python raises) and leave the precise error to the interpreter."""

from __future__ import annotations

from ._message_code import FIXED, Code, ModuleNames, array_name
from .layout import ABSENT, REGULAR, TAGGED, FieldPlan, Layout
from .spec import MessageSpec

__all__ = ["EncoderEmitter"]


class EncoderEmitter:
    def __init__(self, code: Code, names: ModuleNames) -> None:
        self.code = code
        self.names = names

    def emit_encoder(self, message: MessageSpec, layout: Layout) -> None:
        c = self.code
        c(f"def _enc_{layout.label}(out, o):")
        with c.indent():
            body_start = len(c.lines)
            plans = layout.plans
            i = 0
            while i < len(plans):
                p = plans[i]
                if p.mode == REGULAR and p.field.type.kind in FIXED:
                    j = i
                    while j < len(plans) and plans[j].mode == REGULAR and plans[j].field.type.kind in FIXED:
                        j += 1
                    self.encode_fixed_run(plans[i:j])
                    i = j
                    continue
                if p.mode == REGULAR:
                    c(f"v = o.{p.field.attr}")
                    self.encode_value(p, "v", p.field.type)
                elif p.mode == ABSENT and not p.field.ignorable:
                    c(f"if o.{p.field.attr} != {self.names.default_expr(message, p.field)}:")
                    with c.indent():
                        c(f"raise _NonDefault({p.field.attr!r})")
                i += 1
            if layout.flexible:
                tagged = sorted((p for p in plans if p.mode == TAGGED), key=lambda p: p.field.tag)
                if not tagged:
                    c("if o.unknown_tagged_fields:")
                    with c.indent():
                        c("_write_tags(out, [], o.unknown_tagged_fields)")
                    c("else:")
                    with c.indent():
                        c("out.append(0)")
                else:
                    c("tags = []")
                    for p in tagged:
                        c(f"v = o.{p.field.attr}")
                        c(f"if v != {self.names.default_expr(message, p.field)}:")
                        with c.indent():
                            c("t = bytearray()")
                            self.encode_value(p, "v", p.field.type, out="t")
                            c(f"tags.append(({p.field.tag}, t))")
                    c("_write_tags(out, tags, o.unknown_tagged_fields)")
            if len(c.lines) == body_start:
                c("pass")
        c()

    def encode_fixed_run(self, plans: list[FieldPlan]) -> None:
        fmt = ">" + "".join(FIXED[p.field.type.kind][0] for p in plans)
        args = [
            f"o.{p.field.attr}.bytes" if p.field.type.kind == "uuid" else f"o.{p.field.attr}" for p in plans
        ]
        self.code(f"out += {self.names.struct_const(fmt)}.pack({', '.join(args)})")

    def write_length(self, n: str, compact: bool, wide: bool, out: str) -> None:
        c = self.code
        if compact:
            c(f"if {n} < 0x7F:")
            with c.indent():
                c(f"{out}.append({n} + 1)")
            c("else:")
            with c.indent():
                c(f"_write_uvarint({out}, {n} + 1)")
        elif wide:
            c(f"{out} += _I32.pack({n})")
        else:
            c(f"{out} += _I16.pack({n})")

    def write_null(self, compact: bool, wide: bool, out: str) -> None:
        if compact:
            self.code(f"{out}.append(0)")
        else:
            self.code(f"{out} += {'_NULL32' if wide else '_NULL16'}")

    def encode_value(self, p: FieldPlan, var: str, ftype, depth: int = 0, out: str = "out") -> None:
        c = self.code
        kind = ftype.kind
        if kind in FIXED:
            fmt, _size = FIXED[kind]
            value = f"{var}.bytes" if kind == "uuid" else var
            c(f"{out} += {self.names.struct_const('>' + fmt)}.pack({value})")
            return
        nullable = p.nullable and depth == 0
        n = f"n{depth}"
        if kind in ("string", "bytes", "records"):
            if nullable:
                c(f"if {var} is None:")
                with c.indent():
                    self.write_null(p.compact, kind != "string", out)
                c("else:")
                c.depth += 1
            if kind == "string":
                c(f"b = {var}.encode()")
                c(f"{n} = len(b)")
                c(f"if {n} > 0x7FFF:")
                with c.indent():
                    c("raise _TooLong")
                self.write_length(n, p.compact, False, out)
                c(f"{out} += b")
            else:
                c(f"{n} = len({var})")
                self.write_length(n, p.compact, True, out)
                if kind == "records":  # may be a file region to splice in (zero-copy fetch)
                    c(f"_append_records({out}, {var})")
                else:
                    c(f"{out} += {var}")
            if nullable:
                c.depth -= 1
            return
        if kind == "struct":
            if nullable:
                c(f"if {var} is None:")
                with c.indent():
                    c(f"{out} += b'\\xff'")
                c("else:")
                with c.indent():
                    c(f"{out} += b'\\x01'")
                    c(f"_enc_{p.child.label}({out}, {var})")
            else:
                c(f"if {var} is None:")
                with c.indent():
                    c("raise _NotNullable")
                c(f"_enc_{p.child.label}({out}, {var})")
            return
        element = ftype.element
        if nullable:
            c(f"if {var} is None:")
            with c.indent():
                self.write_null(p.compact, True, out)
            c("else:")
            c.depth += 1
        c(f"{n} = len({var})")
        self.write_length(n, p.compact, True, out)
        if element.kind in FIXED and element.kind != "uuid":
            fmt, _size = FIXED[element.kind]
            c(f"if {n} < 64:")
            with c.indent():
                c(f"{out} += _ARRAY_{array_name(fmt)}[{n}].pack(*{var})")
            c("else:")
            with c.indent():
                c(f"{out} += _pack('>%d{fmt}' % {n}, *{var})")
        else:
            item = f"i{depth}"
            c(f"for {item} in {var}:")
            with c.indent():
                if element.kind == "struct":
                    c(f"_enc_{p.child.label}({out}, {item})")
                else:
                    self.encode_value(p, item, element, depth + 1, out)
        if nullable:
            c.depth -= 1
