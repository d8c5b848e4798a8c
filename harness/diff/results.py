"""What a differential campaign found, built from its journal records (one per case) so that a run and
its resumption count alike: causes, every field signature seen (the traces' own unit), crashes,
coverage, and summary.json."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from kconform.codecs import api_schema

from .case_files import operations_from_json
from .causes import Cause, Facet, Sighting
from .engine import CaseResult

__all__ = ["CampaignResult", "Found", "case_record", "drawn_index", "example_of"]

_MAX_VALUE_PAIRS = 50


@dataclasses.dataclass
class Found:
    """One field signature (``Api/vN/path/kind``): how often, with which values, and its cause."""

    signature: str
    api_key: int
    api_version: int
    field_path: str
    kind: str
    cause: str
    count: int = 0
    example: dict | None = None  # a: ..., b: ... from the first sighting
    case_id: str | None = None  # its cause's stored case
    value_pairs: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    first_case: int = 1 << 62  # the index of the first drawn case showing it; -1 for the opening case


def case_record(result: CaseResult, operations: list[dict]) -> dict:
    """A case as the journal keeps it: enough to count it again on resumption without running it."""
    return {
        "case": result.case_id,
        "operations": operations,
        "skipped": len(result.skipped),
        "pairs": len(result.exchanges),
        "exchanged": sorted({(pair[0].api_key, pair[0].api_version) for pair in result.exchanges}),
        "differences": [
            {
                "op": d.op_index,
                "api_key": result.ops[d.op_index].api_key,
                "signature": d.signature,
                "a": _short(d.difference.a),
                "b": _short(d.difference.b),
            }
            for d in result.divergences
        ],
        "sightings": [
            {
                "op": index,
                "api_key": result.ops[index].api_key,
                "version": version,
                "key": s.key,
                "api_name": s.api_name,
                "shape": s.shape,
                "request_shape": s.request_shape,
                "facets": [dataclasses.astuple(f) for f in s.facets],
                "consequences": list(s.consequences),
            }
            for index, version, s in result.sightings
        ],
    }


def example_of(op, version: int, facets: tuple[Facet, ...]) -> dict:
    """A cause's example: the request that showed it, readable, and both sides' values."""
    first = facets[0]
    return {"operation": op.describe(version), "api_version": version, "a": first.a_value, "b": first.b_value}


def sighting_of(record: dict) -> Sighting:
    facets = tuple(Facet(*f) for f in record["facets"])
    return Sighting(
        record["key"],
        record["api_name"],
        record["shape"],
        facets,
        tuple(record["consequences"]),
        record.get("request_shape", ""),
    )


def drawn_index(record: dict) -> int:
    """Where a journal record's case is in the run's drawing (``<run>c<n>`` is the n-th drawn case; the
    opening case, which every run has, is -1). Drawing is a function of the seed, so two runs with the
    same seed draw the same case at the same index."""
    if record.get("opening"):
        return -1
    _, _, number = str(record["case"]).rpartition("c")
    return int(number) if number.isdigit() else 1 << 62


@dataclasses.dataclass
class CampaignResult:
    run_id: str
    targets: tuple[str, str]
    seed: int | None = None
    cases: int = 0
    operations: int = 0
    pairs_compared: int = 0
    skipped_pairs: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    shared: dict[int, tuple[int, int]] = dataclasses.field(default_factory=dict)
    advertised: dict[str, dict[int, tuple[int, int]]] = dataclasses.field(default_factory=dict)  # by target
    skipped_operations: int = 0
    shrink_operations: int = 0
    crashes: list = dataclasses.field(default_factory=list)  # (target, api key, version, last words)
    causes: dict[str, Cause] = dataclasses.field(default_factory=dict)
    found: dict[str, Found] = dataclasses.field(default_factory=dict)
    exercised: set[tuple[int, int]] = dataclasses.field(default_factory=set)
    seconds: float = 0.0
    shrink_seconds: float = 0.0
    drawing_seconds: float = 0.0
    broker_seconds: float = 0.0  # of the drawing: waiting for the targets' answers
    notes: list[str] = dataclasses.field(default_factory=list)
    configuration: dict[str, dict] = dataclasses.field(default_factory=dict)  # target name -> settings

    def count(self, record: dict) -> None:
        """Add one journal record (a case run now, or one a resumed run finds done). ``cases`` counts the
        drawn cases, not the opening case."""
        self.cases += not record.get("opening")
        self.operations += record["pairs"]
        self.pairs_compared += record["pairs"]
        self.skipped_operations += record["skipped"]
        self.crashes += [tuple(crash) for crash in record.get("crashes", [])]
        self.exercised.update(tuple(pair) for pair in record["exchanged"])
        cause_of_op: dict[int, list[str]] = {}
        for entry in record["sightings"]:
            sighting = sighting_of(entry)
            cause = self.causes.get(sighting.key)
            if cause is None:
                cause = self.causes[sighting.key] = Cause(
                    sighting.key,
                    entry["api_key"],
                    sighting.api_name,
                    sighting.shape,
                    sighting.facets,
                    len(self.causes),
                )
                op = operations_from_json([record["operations"][entry["op"]]])[0]
                cause.example = example_of(op, entry["version"], sighting.facets)
            cause.add(sighting, entry["version"], record["case"])
            cause_of_op.setdefault(entry["op"], []).append(sighting.key)
        for difference in record["differences"]:
            sig = difference["signature"]
            found = self.found.get(sig)
            if found is None:
                _, version, rest = sig.split("/", 2)
                path, kind = rest.rsplit("/", 1)
                cause = (cause_of_op.get(difference["op"]) or ["?"])[0]
                found = self.found[sig] = Found(
                    sig, difference["api_key"], int(version[1:]), path, kind, cause,
                    example={"a": difference["a"], "b": difference["b"], "case": record["case"]},
                )  # fmt: skip
            found.count += 1
            found.first_case = min(found.first_case, drawn_index(record))
            pair = (json.dumps(difference["a"], default=str), json.dumps(difference["b"], default=str))
            if pair not in found.value_pairs and len(found.value_pairs) < _MAX_VALUE_PAIRS:
                found.value_pairs.append(pair)

    def coverage(self) -> dict:
        """The (API, version) pairs both targets advertise, which the run exchanged, and which not."""
        from .drawing import drawn_api_keys, not_drawn_reason

        offered = {(key, v) for key, (low, high) in self.shared.items() for v in range(low, high + 1)}
        missed = sorted(offered - self.exercised)
        drawn = drawn_api_keys()
        return {
            # every side's own ranges, so a report can show the pairs only one side offers
            "advertised": {
                target: [[k, _api_name(k), low, high] for k, (low, high) in sorted(ranges.items())]
                for target, ranges in self.advertised.items()
            },
            "offered_by_both": len(offered),
            "exercised": len(offered & self.exercised),
            "not_exercised": [
                {
                    "api_key": k,
                    "api_name": api_schema(k).name,
                    "api_version": v,
                    "why": "drawn, but this version was not reached in this run"
                    if k in drawn
                    else not_drawn_reason(k),
                }
                for k, v in missed
            ],
        }

    def summary(self) -> dict:
        a_name, b_name = self.targets
        by_kind = Counter(f.kind for f in self.found.values())
        causes = sorted(self.causes.values(), key=lambda c: c.number)
        return {
            "run_id": self.run_id,
            "targets": list(self.targets),
            "seed": self.seed,
            # the run drew cases 0 .. cases-1 of its seed's sequence, in order: a later run with the
            # same seed that drew further met the same cases up to here
            "cases": self.cases,
            "operations": self.operations,
            "pairs_compared": self.pairs_compared,
            "skipped_operations": self.skipped_operations,
            "shrink_operations": self.shrink_operations,
            "seconds": round(self.seconds, 2),
            "drawing_seconds": round(self.drawing_seconds, 2),
            "broker_seconds": round(self.broker_seconds, 2),
            "shrink_seconds": round(self.shrink_seconds, 2),
            "crashes": [
                {"target": t, "api_key": k, "api_version": v, "message": m} for t, k, v, m in self.crashes
            ],
            "skipped_api_versions": [{"api_key": k, "api_version": v} for k, v in self.skipped_pairs],
            "coverage": self.coverage(),
            "notes": self.notes,
            "configuration": self.configuration,
            "causes": [c.to_json(a_name, b_name) for c in causes],
            "differences_by_kind": dict(by_kind),
            "differences": [
                {
                    "signature": f.signature,
                    "cause": f.cause,
                    "api_key": f.api_key,
                    "api_version": f.api_version,
                    "field_path": f.field_path,
                    "kind": f.kind,
                    "count": f.count,
                    "case_id": f.case_id,
                    "shrunk": self.causes[f.cause].shrunk if f.cause in self.causes else False,
                    "example": f.example,
                    "value_pairs": [[json.loads(a), json.loads(b)] for a, b in f.value_pairs],
                    "first_case": f.first_case,
                }
                for f in sorted(self.found.values(), key=lambda f: f.signature)
            ],
        }


def _api_name(api_key: int) -> str:
    try:
        return api_schema(api_key).name
    except KeyError:  # a key this kconform has no schema for: a newer broker's
        return f"api-{api_key}"


def _short(value):
    text = json.dumps(value, default=str)
    return value if len(text) <= 300 else text[:300] + "..."
