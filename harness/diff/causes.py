"""Root causes: the differences of a campaign grouped by what makes them, before anything is shrunk.

One behaviour shows up as many signatures: an unknown-topic rule differs at every version of an API and
in every field the error empties. A cause is therefore keyed without the version, by the request's
shape and the *primary* differences of an exchange:
- a different fate (one side answered, the other closed, went silent or crashed) is the cause, and says
  which side did what;
- else the error codes that differ, together: the other fields of that answer (offsets, records) are
  their consequences, listed with the cause but not causes of their own;
- else every differing field with its pair of values is a cause of its own.

Everything here is pure: exchanges in, cause keys and tallies out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .compare import Difference

__all__ = ["Cause", "Facet", "Sighting", "error_beside", "sightings"]

_CONNECTION = "<connection>"


@dataclass(frozen=True, order=True)
class Facet:
    """One primary difference, generalised over list indexes: the field, its kind, both values."""

    path: str
    kind: str
    a: str  # the values as JSON text, so facets hash and sort
    b: str

    def signature(self, api_name: str, version: int) -> str:
        return f"{api_name}/v{version}/{self.path}/{self.kind}"

    @property
    def a_value(self):
        return _loads(self.a)

    @property
    def b_value(self):
        return _loads(self.b)


@dataclass(frozen=True)
class Sighting:
    """A cause as one exchange showed it."""

    key: str  # the cause id
    api_name: str
    shape: str  # the request's shape where it decides the cause (error codes), else empty
    facets: tuple[Facet, ...]
    consequences: tuple[str, ...]  # generic paths of the other fields that differ with it
    request_shape: str = ""  # the request's shape, kept even where it is not part of the key


def sightings(
    api_name: str,
    shape: str,
    differences: list[Difference],
    error_at: Callable[[str], int] | None = None,
    *,
    answer_due: bool = True,
) -> list[Sighting]:
    """The causes one exchange shows (none when the answers agree). ``error_at(path)`` gives the error
    code both sides agree on beside a differing field (0 if none): a field that differs under an error
    (the offsets of a partition both refuse) is a cause of its own, told apart by that error.
    ``answer_due`` is false for a request that must get no answer (Produce with acks=0)."""
    if not differences:
        return []
    fates = [d for d in differences if d.path == _CONNECTION]
    if fates:  # who answered and who closed decides it, whatever else the request held, except
        # whether an answer was due at all: a side that answers a request due none (acks=0) and a side
        # that closes on a version it refuses are two behaviours even where the fates read alike
        return [_sighting(api_name, "", fates, [], shape, "" if answer_due else "no answer due")]
    errors = [d for d in differences if d.kind == "error_code"]
    if errors:  # an error code answers the request's shape: an unknown topic, acks=2
        rest = [d for d in differences if d.kind != "error_code"]
        return [_sighting(api_name, shape, errors, rest, shape)]
    by_facet = {}
    for difference in differences:  # several partitions differing alike are one cause
        code = error_at(difference.path) if error_at else 0
        by_facet.setdefault((_facet(difference), code), difference)
    return [
        _sighting(api_name, f"under error {code}" if code else "", [d], [], shape)
        for (_, code), d in by_facet.items()
    ]


def error_beside(tree, path: str) -> int:
    """The ``error_code`` of the entry that holds the field at ``path`` in ``tree`` (0 if none)."""
    node = tree
    parts = path.replace("[", ".[").split(".")[:-1]
    for part in (p for p in parts if p):
        if part.startswith("["):
            index = int(part[1:-1])
            node = node[index] if isinstance(node, list) and index < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    code = node.get("error_code") if isinstance(node, dict) else None
    return code if isinstance(code, int) else 0


def _facet(difference: Difference) -> Facet:
    return Facet(difference.generic_path, difference.kind, _json(difference.a), _json(difference.b))


def _sighting(api_name, shape, primary, rest, request_shape, kind_of_request="") -> Sighting:
    facets = tuple(sorted(set(map(_facet, primary))))
    key_parts = [api_name, shape, [list(vars(f).values()) for f in facets]]
    key_text = json.dumps(key_parts + [kind_of_request] if kind_of_request else key_parts)
    key = "c" + hashlib.sha1(key_text.encode()).hexdigest()[:10]
    consequences = tuple(sorted({d.generic_path for d in rest}))
    return Sighting(key, api_name, shape, facets, consequences, request_shape)


def _json(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 300 else text[:300] + "..."


@dataclass
class Cause:
    """What a campaign knows of one cause: where it was seen and how often, and its stored case."""

    id: str
    api_key: int
    api_name: str
    shape: str
    facets: tuple[Facet, ...]
    number: int  # order of discovery: case-NNN
    versions: set[int] = field(default_factory=set)
    request_shapes: set[str] = field(default_factory=set)  # every request shape it was seen with
    signatures: set[str] = field(default_factory=set)
    consequences: set[str] = field(default_factory=set)
    exchanges: int = 0
    cases: set[str] = field(default_factory=set)
    example: dict | None = None  # from the stored case's replay: version, values, request
    shrunk: bool = False
    reproduced: bool | None = None  # did the stored case show it again when replayed (None: not tried)
    stored_operations: int = 0
    verdict: dict | None = None

    def add(self, sighting: Sighting, version: int, case_id: str) -> None:
        self.versions.add(version)
        if sighting.request_shape:
            self.request_shapes.add(sighting.request_shape)
        self.signatures.update(f.signature(self.api_name, version) for f in sighting.facets)
        self.consequences.update(sighting.consequences)
        self.exchanges += 1
        self.cases.add(case_id)

    @property
    def case_file(self) -> str:
        return f"case-{self.number:03d}"

    def title(self, a_name: str, b_name: str) -> str:
        """One line a reader understands without the summary: which request, what each side did."""
        facet = self.facets[0]
        if facet.path == _CONNECTION:
            what = f"{a_name} {_fate_words(facet.a_value)}, {b_name} {_fate_words(facet.b_value)}"
        else:
            what = f"{facet.path} ({facet.kind}): {a_name} {facet.a}, {b_name} {facet.b}"
            if len(self.facets) > 1:
                what += f" and {len(self.facets) - 1} more"
        shape = f" {self.shape}" if self.shape else ""
        return f"{self.api_name} v{_span(self.versions)}{shape}: {what}"

    def to_json(self, a_name: str, b_name: str) -> dict:
        return {
            "cause": self.id,
            "title": self.title(a_name, b_name),
            "api_key": self.api_key,
            "api_name": self.api_name,
            "versions": sorted(self.versions),
            "shape": self.shape,
            "request_shapes": sorted(self.request_shapes),
            "facets": [{"path": f.path, "kind": f.kind, "a": f.a_value, "b": f.b_value} for f in self.facets],
            "consequences": sorted(self.consequences),
            "signatures": sorted(self.signatures),
            "exchanges": self.exchanges,
            "cases": len(self.cases),
            "case_id": self.case_file,
            "shrunk": self.shrunk,
            "reproduced": self.reproduced,
            "operations": self.stored_operations,
            "example": self.example,
            "verdict": self.verdict,
        }


def _loads(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # a value cut short for the summary
        return text


_FATES = {
    "answered": "answered",
    "closed": "closed the connection",
    "timeout": "stayed silent",
    "no_response": "sent no response, as asked",
    "crashed": "crashed",
    "undecodable": "answered with bytes that do not decode",
}


def _fate_words(fate) -> str:
    return _FATES.get(fate, str(fate))


def _span(versions: set[int]) -> str:
    if not versions:
        return "?"
    low, high = min(versions), max(versions)
    return str(low) if low == high else f"{low}-{high}"
