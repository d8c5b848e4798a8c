"""Which wire layout each struct has at each version.

Many versions of a message differ only in meaning, not in bytes. A layout is the exact byte shape of a
struct at one version (which fields are written, nullable, compact or tagged, and the layouts of nested
structs); versions that share a layout share one generated encoder and one decoder, so the generated
code is straight-line with no version checks inside."""

from __future__ import annotations

from dataclasses import dataclass

from .spec import FieldSpec, MessageSpec, StructSpec

__all__ = ["FieldPlan", "Layout", "LayoutTable"]

REGULAR, TAGGED, ABSENT = "regular", "tagged", "absent"


@dataclass(frozen=True, slots=True)
class FieldPlan:
    field: FieldSpec
    mode: str  # REGULAR, TAGGED or ABSENT
    nullable: bool
    compact: bool
    child: Layout | None  # the nested struct's layout, for struct and struct-array fields


@dataclass(frozen=True, slots=True)
class Layout:
    struct: StructSpec
    flexible: bool
    plans: tuple[FieldPlan, ...]
    label: str  # unique within the message, used in function names

    @property
    def key(self):
        return _layout_key(self.struct, self.flexible, self.plans)


def _layout_key(struct: StructSpec, flexible: bool, plans) -> tuple:
    return (
        struct.name,
        flexible,
        tuple(
            (p.field.attr, p.mode, p.nullable, p.compact, p.child.label if p.child else None) for p in plans
        ),
    )


class LayoutTable:
    """Every distinct layout of every struct of one message, and which version uses which."""

    def __init__(self, message: MessageSpec) -> None:
        self.message = message
        self._by_key: dict[tuple, Layout] = {}
        self.layouts: list[Layout] = []  # children before parents, so emitted code reads top-down
        self.top_by_version: dict[int, Layout] = {}
        for version in message.valid_versions:
            self.top_by_version[version] = self._layout(message.struct, version)

    def _layout(self, struct: StructSpec, version: int) -> Layout:
        flexible = version in self.message.flexible_versions
        plans = []
        for f in struct.fields:
            if version in f.tagged_versions:
                mode = TAGGED
            elif version in f.versions:
                mode = REGULAR
            else:
                mode = ABSENT
            child = None
            if f.struct is not None and mode != ABSENT:
                child = self._layout(f.struct, version)
            compact = flexible if f.flexible_versions is None else version in f.flexible_versions
            nullable = mode != ABSENT and version in f.nullable_versions
            plans.append(FieldPlan(f, mode, nullable, compact, child))
        key = _layout_key(struct, flexible, plans)
        layout = self._by_key.get(key)
        if layout is None:
            label = (
                f"{self.message.name}_{struct.name}_v{version}"
                if struct is not self.message.struct
                else f"{self.message.name}_v{version}"
            )
            layout = Layout(struct, flexible, tuple(plans), label)
            self._by_key[key] = layout
            self.layouts.append(layout)
        return layout
