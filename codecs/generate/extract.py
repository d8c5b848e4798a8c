"""Stage zero of the generator: a facts-only extract of Apache Kafka's definitions.

Kafka 4.0 dropped old versions from its message files (KIP-896) but kept every field's version range,
and a removed version's layout never changed afterwards. So one definition per message covers every
version any release ever spoke: the newest file's fields, with versions from the oldest minimum to the
newest maximum. ``merge_layers`` builds that definition and proves the claim as it goes: for every
version an older file defines, the merged definition must give exactly the older file's layout.

The extract keeps facts only (names, types, versions, tags, defaults, flags), never ``about`` text or
comments, so the project can commit it and build from it alone. Its layout::

    messages/<Name>.json      requests, responses, headers and data messages (every version)
    coordinator/<Name>.json   __consumer_offsets and __transaction_state record keys and values
    metadata/<Name>.json      KRaft __cluster_metadata records
    api-versions.tsv          what a broker of each release advertises in ApiVersions
    errors.tsv                the error-code table (code, name, exception, retriable, invalid metadata)
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from .spec import SpecError, strip_comments
from .versions import Versions

__all__ = [
    "ExtractSource",
    "DEFINITIONS_DIR",
    "build_extract",
    "merge_layers",
    "read_definitions",
    "source_layers",
    "write_extract",
]

DEFINITIONS_DIR = Path(__file__).resolve().parent.parent / "definitions"

_MESSAGE_KEYS = (
    "apiKey",
    "type",
    "name",
    "validVersions",
    "flexibleVersions",
    "listeners",
    "latestVersionUnstable",
    "deprecatedVersions",
    "fields",
    "commonStructs",
)
_FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "flexibleVersions",
    "zeroCopy",
    "fields",
)
_STRUCT_KEYS = ("name", "versions", "fields")
_API_VERSIONS_COLUMNS = ("kafka_version", "api_key", "api_name", "min_version", "max_version")
_ERROR_COLUMNS = ("code", "name", "exception", "retriable", "invalid_metadata")


@dataclass(frozen=True, slots=True)
class ExtractSource:
    """Where the definitions come from: message folders oldest first, and the side tables."""

    message_layers: tuple[Path, ...]
    coordinator: Path | None
    metadata: Path | None
    api_versions: Path | None
    errors: Path | None


def source_layers(spec_dir: Path) -> ExtractSource:
    """The layers of a kafka-spec folder (the pre-4.0 ``message/``, then ``kafka-4.1``, ``kafka-4.3``
    and any later ``kafka-X.Y``), or a plain folder of message definitions as the only layer."""
    spec_dir = Path(spec_dir)
    if any(spec_dir.glob("*.json")):
        return ExtractSource((spec_dir,), None, None, None, None)
    layers = [spec_dir / "message"] if (spec_dir / "message").is_dir() else []
    releases = [p for p in spec_dir.glob("kafka-*") if (p / "message").is_dir()]
    releases.sort(key=lambda p: tuple(int(x) for x in p.name.removeprefix("kafka-").split(".")))
    layers += [p / "message" for p in releases]
    if not layers:
        raise SpecError(f"no message definitions in {spec_dir} (expected *.json, message/ or kafka-X.Y/)")

    def optional(name: str) -> Path | None:
        path = spec_dir / name
        return path if path.exists() else None

    return ExtractSource(
        tuple(layers),
        optional("coordinator"),
        optional("metadata"),
        optional("api-versions.tsv"),
        optional("errors.tsv"),
    )


def _facts(doc: dict, keys: tuple[str, ...]) -> dict:
    out = {}
    for key in keys:
        if key not in doc:
            continue
        value = doc[key]
        if key == "fields":
            value = [_facts(f, _FIELD_KEYS) for f in value]
        elif key == "commonStructs":
            value = [_facts(s, _STRUCT_KEYS) for s in value]
        out[key] = value
    return out


def _read_folder(folder: Path) -> list[dict]:
    docs = []
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SpecError(f"no definitions (*.json) in {folder}")
    for path in files:
        try:
            docs.append(_facts(json.loads(strip_comments(path.read_text())), _MESSAGE_KEYS))
        except (ValueError, KeyError) as exc:
            raise SpecError(f"{path}: {exc}") from exc
    return docs


def _identity(doc: dict) -> tuple:
    """API messages join by key and type (a renamed API keeps its key); the rest by name."""
    if doc.get("apiKey") is not None and doc["type"] in ("request", "response"):
        return ("api", doc["apiKey"], doc["type"])
    return ("name", doc["name"])


def merge_layers(layers: list[list[dict]]) -> list[dict]:
    """One definition per message from layers of definitions, oldest layer first."""
    merged: dict[tuple, dict] = {}
    for layer in layers:
        # A request's latestVersionUnstable speaks for its response too: that version may still change.
        unstable = {
            doc["apiKey"]
            for doc in merged.values()
            if doc["type"] == "request" and doc.get("latestVersionUnstable")
        }
        seen: set[tuple] = set()
        for doc in layer:
            key = _identity(doc)
            if key in seen:
                raise SpecError(f"{doc['name']}: defined twice in one layer")
            seen.add(key)
            old = merged.get(key)
            if old is None:
                merged[key] = doc
            else:
                merged[key] = _merge(old, doc, old_top_unstable=old.get("apiKey") in unstable)
    return sorted(merged.values(), key=lambda d: d["name"])


def _merge(old: dict, new: dict, *, old_top_unstable: bool = False) -> dict:
    old_valid = Versions.parse(old["validVersions"])
    new_valid = Versions.parse(new["validVersions"])
    if old_top_unstable and not old_valid.empty:
        # An unreleased version is no release's: the newer file defines it, or nobody does.
        old_valid = (
            Versions(old_valid.lowest, old_valid.highest - 1)
            if old_valid.lowest < old_valid.highest
            else Versions.parse("none")
        )
    if new_valid.empty:  # a removed API (the ZooKeeper-era ones): its last definition stands
        return old
    if old_valid.empty:
        return new
    if Versions.parse(old["flexibleVersions"]) != Versions.parse(new["flexibleVersions"]):
        raise SpecError(f"{new['name']}: flexible versions changed from {old['flexibleVersions']}")
    merged = dict(new)
    below = new_valid.lowest
    merged["fields"] = _merge_fields(old["fields"], new["fields"], below)
    if "commonStructs" in old or "commonStructs" in new:
        merged["commonStructs"] = _merge_structs(
            old.get("commonStructs", []), new.get("commonStructs", []), below
        )
    lo = min(old_valid.lowest, new_valid.lowest)
    hi = max(old_valid.highest, new_valid.highest)
    merged["validVersions"] = f"{lo}-{hi}" if lo != hi else str(lo)
    if old_valid.highest > new_valid.highest:  # the newer file dropped versions at the top
        raise SpecError(f"{new['name']}: versions above {new_valid.highest} vanished")
    for version in range(old_valid.lowest, old_valid.highest + 1):
        before, after = layout_at(old, version), layout_at(merged, version)
        if _wire(before) != _wire(after):  # names may change (a renamed field); the bytes may not
            raise SpecError(
                f"{new['name']} v{version}: the newer definition changes this version's layout "
                f"({_first_difference(before, after)})"
            )
    return merged


def _merge_fields(old: list[dict], new: list[dict], below: int) -> list[dict]:
    """The newer fields, with any field a newer file dropped because only versions under ``below`` (the
    newer file's minimum) had it put back where it stood, after the field that preceded it. A field
    missing from the newer file that later versions still have was renamed: the newer name stands."""
    new_by_name = {f["name"]: f for f in new}
    out = [dict(f) for f in new]
    anchor = -1  # index in ``out`` after which an old-only field goes
    for f in old:
        if f["name"] in new_by_name:
            anchor = next(i for i, g in enumerate(out) if g["name"] == f["name"])
            if f.get("ignorable") and not out[anchor].get("ignorable"):
                # ignorable speaks of the versions that lack the field: the older file knew more of them
                out[anchor]["ignorable"] = True
            if "fields" in f and "fields" in out[anchor]:
                out[anchor]["fields"] = _merge_fields(f["fields"], out[anchor]["fields"], below)
        elif Versions.parse(f.get("versions") or f["taggedVersions"]).highest < below:
            anchor += 1
            out.insert(anchor, f)
    return out


def _merge_structs(old: list[dict], new: list[dict], below: int) -> list[dict]:
    by_name = {s["name"]: s for s in old}
    out = []
    for struct in new:
        merged = dict(struct)
        if struct["name"] in by_name:
            merged["fields"] = _merge_fields(by_name[struct["name"]]["fields"], struct["fields"], below)
        out.append(merged)
    names = {s["name"] for s in new}
    return out + [s for s in old if s["name"] not in names]


def layout_at(doc: dict, version: int) -> tuple:
    """What a version of a message puts on the wire: each present field's name, type, nullability,
    tag and default, nested structs included."""
    structs = {s["name"]: s["fields"] for s in doc.get("commonStructs", [])}
    flexible = version in Versions.parse(doc["flexibleVersions"])

    def fields_at(fields: list[dict]) -> tuple:
        out = []
        for f in fields:
            if version not in Versions.parse(f.get("versions") or f["taggedVersions"]):
                continue
            tagged = version in Versions.parse(f.get("taggedVersions", "none"))
            type_name = f["type"]
            nested = f.get("fields")
            if nested is None and type_name.removeprefix("[]") in structs:
                nested = structs[type_name.removeprefix("[]")]
            out.append(
                (
                    f["name"],
                    type_name,
                    version in Versions.parse(f.get("nullableVersions", "none")),
                    int(f["tag"]) if tagged and flexible else None,
                    str(f.get("default", "")),
                    fields_at(nested) if nested is not None else (),
                )
            )
        return tuple(out)

    return fields_at(doc["fields"])


def _wire(layout: tuple) -> tuple:
    """A layout without names: field names and struct type names are not on the wire."""

    def type_shape(name: str) -> str:
        base = name.removeprefix("[]")
        return name[: len(name) - len(base)] + ("struct" if base[:1].isupper() else base)

    return tuple((type_shape(f[1]), *f[2:5], _wire(f[5])) for f in layout)


def _first_difference(before: tuple, after: tuple, path: str = "") -> str:
    if len(before) != len(after):
        names = [f[0] for f in before], [f[0] for f in after]
        return f"fields at {path or 'top'}: {names[0]} became {names[1]}"
    for a, b in zip(before, after, strict=True):
        if a[1:5] != b[1:5]:
            return f"field {path}{a[0]}: {a[1:5]} became {b[0]} {b[1:5]}"
        if a[5] != b[5]:
            return _first_difference(a[5], b[5], f"{path}{a[0]}.")
    return "no difference"


def _read_tsv(path: Path, columns: tuple[str, ...]) -> str:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = set(columns) - set(reader.fieldnames or ())
        if missing:
            raise SpecError(f"{path}: missing columns {sorted(missing)}")
        out = io.StringIO()
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(columns)
        for row in reader:
            writer.writerow([row[c] for c in columns])
    return out.getvalue()


def build_extract(source: ExtractSource, base: Path | None = None) -> dict[str, str]:
    """Every file of the extract, by relative path, as text. With ``base`` (an existing extract), its
    messages are the oldest layer and its side tables stay where ``source`` has none."""
    layers = [_read_folder(base / "messages")] if base is not None else []
    layers += [_read_folder(folder) for folder in source.message_layers]
    files = {f"messages/{doc['name']}.json": _dump(doc) for doc in merge_layers(layers)}
    for kind, folder in (("coordinator", source.coordinator), ("metadata", source.metadata)):
        if folder is None and base is not None and (base / kind).is_dir():
            folder = base / kind
        if folder is not None:
            files.update({f"{kind}/{doc['name']}.json": _dump(doc) for doc in _read_folder(folder)})
    for name, path, columns in (
        ("api-versions.tsv", source.api_versions, _API_VERSIONS_COLUMNS),
        ("errors.tsv", source.errors, _ERROR_COLUMNS),
    ):
        if path is None and base is not None and (base / name).exists():
            path = base / name
        if path is not None:
            files[name] = _read_tsv(path, columns)
    return files


def _dump(doc: dict) -> str:
    return json.dumps(doc, indent=1) + "\n"


def write_extract(files: dict[str, str], out: Path) -> list[Path]:
    """Write the extract, removing files it no longer has; returns the paths written or removed."""
    changed = []
    for kind in ("messages", "coordinator", "metadata"):
        for path in sorted((out / kind).glob("*.json")) if (out / kind).is_dir() else []:
            if f"{kind}/{path.name}" not in files:
                path.unlink()
                changed.append(path)
    for name, text in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


def read_definitions(folder: Path) -> list[dict]:
    """The definitions of one extract folder (``messages``, ``coordinator`` or ``metadata``)."""
    return _read_folder(folder)
