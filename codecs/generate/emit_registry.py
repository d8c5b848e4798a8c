"""Stage two, continued: the API registry, the index of class names, and the error-code table."""

from __future__ import annotations

import csv
from pathlib import Path

from .emit_messages import HEADER
from .spec import MessageSpec, SpecError

__all__ = ["emit_registry", "emit_index", "emit_error_codes", "emit_releases", "module_groups"]


def module_groups(messages: list[MessageSpec]) -> dict[str, list[MessageSpec]]:
    """Module name -> the messages it holds: an API's request and response share a module."""
    groups: dict[str, list[MessageSpec]] = {}
    for m in messages:
        if m.type in ("request", "response"):
            base = m.name.removesuffix("Request").removesuffix("Response")
            module = _snake_module(base)
        else:
            module = _snake_module(m.name)
        groups.setdefault(module, []).append(m)
    for members in groups.values():
        members.sort(key=lambda m: (m.type != "request", m.name))
    return dict(sorted(groups.items()))


def _snake_module(name: str) -> str:
    from .spec import snake_case

    return snake_case(name).rstrip("_")


def emit_registry(messages: list[MessageSpec]) -> str:
    requests = {m.api_key: m for m in messages if m.type == "request"}
    responses = {m.api_key: m for m in messages if m.type == "response"}
    if requests.keys() != responses.keys():
        raise SpecError(
            f"API keys without both a request and a response: {requests.keys() ^ responses.keys()}"
        )
    modules = {m.name: mod for mod, ms in module_groups(messages).items() for m in ms}
    lines = [
        HEADER,
        "# (api key, name, module, request class, response class, valid versions, flexible versions,",
        "#  listeners, latest version unstable, deprecated versions)",
        "APIS = (",
    ]
    for key in sorted(requests):
        req, resp = requests[key], responses[key]
        if req.valid_versions != resp.valid_versions:
            raise SpecError(f"{req.name} and {resp.name} have different valid versions")
        if req.flexible_versions != resp.flexible_versions:
            raise SpecError(f"{req.name} and {resp.name} have different flexible versions")
        name = req.name.removesuffix("Request")
        lines.append(
            f"    ({key}, {name!r}, {modules[req.name]!r}, {req.name!r}, {resp.name!r}, "
            f"{req.valid_versions.as_tuple()!r}, {req.flexible_versions.as_tuple()!r}, {req.listeners!r}, "
            f"{req.latest_version_unstable!r}, {req.deprecated_versions.as_tuple()!r}),"
        )
    lines.append(")")
    return "\n".join(lines) + "\n"


def emit_index(messages: list[MessageSpec]) -> str:
    groups = module_groups(messages)
    lines = [HEADER, "# class name -> module, for lazy imports", "MODULE_OF = {"]
    for module, members in groups.items():
        for m in members:
            lines.append(f"    {m.name!r}: {module!r},")
    lines.append("}")
    lines.append("# (name, type) of every message definition that is not a request or response")
    lines.append("OTHER_MESSAGES = (")
    for m in messages:
        if m.type not in ("request", "response"):
            lines.append(f"    ({m.name!r}, {m.type!r}),")
    lines.append(")")
    return "\n".join(lines) + "\n"


def emit_error_codes(path: Path) -> str:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        raise SpecError(f"{path}: no error codes")
    lines = [HEADER, "# (code, name, exception class, retriable, invalid metadata)", "ERROR_CODES = ("]
    seen = set()
    for row in rows:
        code = int(row["code"])
        if code in seen:
            raise SpecError(f"{path}: error code {code} listed twice")
        seen.add(code)
        lines.append(
            f"    ({code}, {row['name']!r}, {row['exception'] or None!r}, {row['retriable'] == 'true'!r}, "
            f"{row['invalid_metadata'] == 'true'!r}),"
        )
    lines.append(")")
    return "\n".join(lines) + "\n"


def emit_releases(path: Path, messages: list[MessageSpec]) -> str:
    """What a broker of each Apache Kafka release advertises in ApiVersions, oldest release first."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        raise SpecError(f"{path}: no releases")
    names = {m.api_key: m.name.removesuffix("Request") for m in messages if m.type == "request"}
    releases: dict[str, dict[int, tuple[int, int]]] = {}
    for row in rows:
        key, lo, hi = int(row["api_key"]), int(row["min_version"]), int(row["max_version"])
        if key not in names:
            raise SpecError(f"{path}: release {row['kafka_version']} advertises unknown API key {key}")
        if not 0 <= lo <= hi:
            raise SpecError(f"{path}: release {row['kafka_version']} key {key}: bad range {lo}-{hi}")
        apis = releases.setdefault(row["kafka_version"], {})
        if key in apis:
            raise SpecError(f"{path}: release {row['kafka_version']} lists key {key} twice")
        apis[key] = (lo, hi)
    order = sorted(releases, key=lambda v: tuple(int(x) for x in v.split(".")))
    lines = [HEADER, "# release -> {api key: (min version, max version)} as its brokers advertise"]
    lines.append("RELEASES = {")
    for version in order:
        lines.append(f"    {version!r}: {{")
        lines += [f"        {k}: {r!r},  # {names[k]}" for k, r in sorted(releases[version].items())]
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"
