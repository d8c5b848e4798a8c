"""Stage two for log records: the coordinator records of ``__consumer_offsets`` and
``__transaction_state``, and the KRaft records of ``__cluster_metadata``, as message classes with a
table that maps each record type to its classes, the way Kafka's coordinators and controller read them.

A coordinator record's key starts with an int16 record type (the key definition's versions) and its
value with an int16 version that selects the value's layout; a metadata record is one frame of
(type, version, fields), its type the definition's ``apiKey``."""

from __future__ import annotations

from .emit_messages import HEADER, emit_module
from .emit_registry import module_groups
from .spec import MessageSpec, SpecError

__all__ = ["emit_record_package"]


def emit_record_package(records: list[MessageSpec], kind: str) -> dict[str, str]:
    """Module files by name, with ``_index.py`` (class -> module, record type -> classes) and
    ``__init__.py`` (every class by name)."""
    groups = module_groups(records)
    files = {f"{module}.py": emit_module(members) for module, members in groups.items()}
    lines = [HEADER, "# class name -> module", "MODULE_OF = {"]
    for module, members in groups.items():
        lines += [f"    {m.name!r}: {module!r}," for m in members]
    lines.append("}")
    if kind == "coordinator":
        lines += _coordinator_types(records)
    elif kind == "metadata":
        lines += _metadata_types(records)
    else:
        raise SpecError(f"unknown record package kind {kind!r}")
    files["_index.py"] = "\n".join(lines) + "\n"
    init = [
        HEADER,
        f'"""Generated {kind} record classes by their spec names, and the record-type table."""',
        "",
        "from ._index import MODULE_OF, RECORD_TYPES",
    ]
    for module, members in groups.items():
        init.append(f"from .{module} import {', '.join(m.name for m in members)}")
    names = sorted(["MODULE_OF", "RECORD_TYPES", *(m.name for m in records)])
    init += ["", "__all__ = ["] + [f"    {n!r}," for n in names] + ["]"]
    files["__init__.py"] = "\n".join(init) + "\n"
    return files


# The transaction coordinator's records live in their own topic; every other one in the group
# coordinator's (share-group state included, as Kafka 4.0's snapshot defines it).
_TRANSACTION_LOG = "TransactionLog"


def _coordinator_types(records: list[MessageSpec]) -> list[str]:
    by_name = {m.name: m for m in records}
    tables: dict[str, dict[int, tuple[str, str]]] = {"__consumer_offsets": {}, "__transaction_state": {}}
    for m in records:
        if not m.name.endswith("Key"):
            continue
        value = m.name.removesuffix("Key") + "Value"
        if value not in by_name:
            raise SpecError(f"{m.name} has no {value}")
        topic = "__transaction_state" if m.name.startswith(_TRANSACTION_LOG) else "__consumer_offsets"
        table = tables[topic]
        for record_type in m.valid_versions:
            if record_type in table:
                raise SpecError(f"record type {record_type} is both {table[record_type][0]} and {m.name}")
            table[record_type] = (m.name, value)
    lines = [
        "# internal topic -> record type (the key's leading int16) -> (key class, value class)",
        "RECORD_TYPES = {",
    ]
    for topic, table in tables.items():
        lines.append(f"    {topic!r}: {{")
        lines += [f"        {t}: {names!r}," for t, names in sorted(table.items())]
        lines.append("    },")
    return lines + ["}"]


def _metadata_types(records: list[MessageSpec]) -> list[str]:
    table: dict[int, str] = {}
    for m in records:
        if m.api_key is None:
            raise SpecError(f"{m.name} has no record type (apiKey)")
        if m.api_key in table:
            raise SpecError(f"record type {m.api_key} is both {table[m.api_key]} and {m.name}")
        table[m.api_key] = m.name
    lines = ["# record type (apiKey) -> record class", "RECORD_TYPES = {"]
    lines += [f"    {t}: {name!r}," for t, name in sorted(table.items())]
    return lines + ["}"]
