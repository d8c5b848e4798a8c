"""Known differences between two targets: each entry names a difference exactly (its signature pattern
and every pair of values it may show) and which side matches Apache Kafka, with the evidence.

``explain`` is a pure judgement over what a campaign found: every (signature, a value, b value) must be
covered by an entry whose pattern matches the signature and which lists that pair of values, and every
entry must cover something, or it is stale (the difference went away: a fix or a regression elsewhere
that the list would otherwise hide)."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KnownDifference", "Judgement", "explain", "load_known_differences", "signature_matches"]

SIDES = ("reference", "rdkafka-mock", "both", "neither")


@dataclass(frozen=True)
class KnownDifference:
    signature: str  # fnmatch pattern over "Api/vN/field.path/kind"; a literal "[*]" stands for itself
    values: tuple[tuple, ...]  # the (a, b) pairs it may show, as decoded JSON
    matches_kafka: str
    what: str
    evidence: str


@dataclass(frozen=True)
class Judgement:
    unexplained: list[tuple[str, object, object]]  # (signature, a, b) no entry covers
    stale: list[KnownDifference]  # entries that covered nothing


def signature_matches(signature: str, pattern: str) -> bool:
    """fnmatch, with ``[*]`` in a pattern meaning the literal ``[*]`` of generalised list indexes."""
    return fnmatch.fnmatchcase(signature, pattern.replace("[*]", "[[][*][]]"))


def load_known_differences(path: Path) -> list[KnownDifference]:
    """Entries from a TOML file of ``[[difference]]`` tables; ``values`` is a list of JSON texts, each
    ``[a, b]`` (JSON, so that a null value can be written)."""
    entries = []
    for raw in tomllib.loads(Path(path).read_text())["difference"]:
        if raw.get("matches_kafka") not in SIDES:
            raise ValueError(f"{path}: {raw.get('signature')}: matches_kafka must be one of {SIDES}")
        if not raw.get("what") or not raw.get("evidence") or not raw.get("values"):
            raise ValueError(f"{path}: {raw.get('signature')}: needs what, evidence and values")
        pairs = []
        for text in raw["values"]:
            pair = json.loads(text)
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"{path}: {raw['signature']}: a value must be [a, b], not {text}")
            pairs.append(tuple(pair))
        entries.append(
            KnownDifference(
                raw["signature"], tuple(pairs), raw["matches_kafka"], raw["what"], raw["evidence"]
            )
        )
    return entries


def explain(found: dict[str, list[tuple]], entries: list[KnownDifference]) -> Judgement:
    """``found``: signature -> the (a, b) value pairs a campaign saw for it."""
    used: set[int] = set()
    unexplained = []
    for signature, pairs in sorted(found.items()):
        for a, b in pairs:
            covering = [
                i
                for i, entry in enumerate(entries)
                if signature_matches(signature, entry.signature) and (a, b) in entry.values
            ]
            if covering:
                used.update(covering)
            else:
                unexplained.append((signature, a, b))
    stale = [entry for i, entry in enumerate(entries) if i not in used]
    return Judgement(unexplained, stale)
