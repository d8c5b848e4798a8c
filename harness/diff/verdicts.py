"""Who deviates from Apache Kafka: a table of rules (``verdicts.toml``), each saying what Kafka answers
for a difference, with the place in Kafka's source that decides it. The table names no pair of targets:
a cause's verdict follows from which side's value Kafka gives, so one rule judges reference vs mock,
reference vs tansu, or mock vs tansu alike.

A rule may also pin what known peers answer instead (``seen``), so that a peer that changes (a fix, a
regression) shows up as news rather than hiding behind an old verdict."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .causes import Cause, Facet
from .context import AFTER_A_CRASH, AFTER_A_DIFFERING_WRITE, AFTER_ANOTHER_MEMBERS_DIFFERING_STEP

__all__ = [
    "CONSEQUENCE",
    "CONSEQUENCES",
    "CONSEQUENCE_RULES",
    "Rule",
    "judge",
    "load_rules",
    "news",
    "signature_matches",
]

# Fates Kafka never shows, whatever the request: (what, evidence).
_NEVER = {
    "crashed": (
        "it crashed",
        "core/src/main/scala/kafka/server/KafkaApis.scala handle(): every request's failure is caught and "
        "answered (requestHelper.handleError); a broker process never ends on a request",
    ),
    "undecodable": (
        "its answer does not decode as the response of that API and version",
        "clients/src/main/resources/common/message/*Response.json: Kafka writes every response with the "
        "serializer generated from its schema (e.g. MetadataResponseData.write)",
    ),
}


# The verdict on a cause seen only on topics an earlier write of its case left different on the two
# targets (one took it, the other refused it): what they hold differs, so their answers may both be
# Kafka's for what each holds. That write's own cause carries the verdict. Likewise for a cause seen
# only after a target crashed (it came back empty) or after another member's join, sync or leave that
# one target took and the other refused (the group's members differ).
CONSEQUENCE = {
    "sides": [],
    "deviates": [],
    "rule": "after-a-differing-write",
    "kafka": [],
    "text": "a consequence: an earlier write in its case was taken by one target only, so the two hold "
    "different records; the verdict is that write's own cause's",
    "evidence": "harness/diff/engine.py: a write (Produce, DeleteRecords, EndTxn, topic changes) whose "
    "errors or fate differ marks its topics; the stored case shows the write before this step",
}
CONSEQUENCES = {
    AFTER_A_DIFFERING_WRITE: CONSEQUENCE,
    AFTER_A_CRASH: {
        **CONSEQUENCE,
        "rule": "after-a-crash",
        "text": "a consequence: a target crashed earlier in its case and came back empty; the verdict is "
        "the crash's own cause's",
        "evidence": "harness/diff/engine.py: a crashed target is restarted, and every later step of the "
        "case says so in its shape; the stored case shows the crash before this step",
    },
    AFTER_ANOTHER_MEMBERS_DIFFERING_STEP: {
        **CONSEQUENCE,
        "rule": "after-another-members-differing-step",
        "text": "a consequence: another member's join, sync or leave in its case was taken by one target "
        "only, so the two groups' members differ; the verdict is that step's own cause's",
        "evidence": "harness/diff/engine.py: a classic member's JoinGroup, SyncGroup or LeaveGroup whose "
        "errors or fate differ marks the member; the stored case shows that step before this one",
    },
}
CONSEQUENCE_RULES = frozenset(v["rule"] for v in CONSEQUENCES.values())


@dataclass(frozen=True)
class Rule:
    id: str
    signature: str  # fnmatch over "Api/vN/path/kind"; a literal "[*]" stands for itself
    kafka: tuple  # the values Apache Kafka gives, decoded (empty: see ``never``)
    what: str
    evidence: str
    shape: str = "*"  # fnmatch over the cause's request shape
    seen: dict[str, tuple] = field(default_factory=dict)  # target kind -> the values it gives instead
    never: tuple = ()  # values Kafka never gives here, when what it gives depends on more than the shape
    shape_excludes: tuple[str, ...] = ()  # fnmatch patterns: shapes the rule does not cover

    def covers(self, cause: Cause, facet: Facet) -> bool:
        # a cause keyed without its request's shape is covered if a request it was seen with is
        shapes = [cause.shape] if cause.shape else sorted(cause.request_shapes) or [""]
        excluded = [s for s in shapes if any(fnmatch.fnmatchcase(s, p) for p in self.shape_excludes)]
        if excluded and len(excluded) == len(shapes):
            return False
        return any(fnmatch.fnmatchcase(s, self.shape) for s in shapes) and self.covers_field(
            cause.api_name, cause.versions, facet.path, facet.kind
        )

    def covers_field(self, api_name: str, versions, path: str, kind: str) -> bool:
        """Whether the rule's signature names this field at one of ``versions``."""
        return any(signature_matches(f"{api_name}/v{v}/{path}/{kind}", self.signature) for v in versions)


def signature_matches(signature: str, pattern: str) -> bool:
    """fnmatch, with ``[*]`` in a pattern meaning the literal ``[*]`` of generalised list indexes."""
    return fnmatch.fnmatchcase(signature, pattern.replace("[*]", "[[][*][]]"))


def _packaged_tables() -> list[str]:
    """The packaged tables: ``verdicts.toml`` and one ``verdicts_<family>.toml`` per API family."""
    files = resources.files(__package__)
    names = sorted(
        f.name for f in files.iterdir() if f.name.startswith("verdicts") and f.name.endswith(".toml")
    )
    return [files.joinpath(name).read_text() for name in names]


def load_rules(path: Path | None = None) -> list[Rule]:
    """The packaged tables, or the one at ``path``. Raises ValueError naming the bad rule."""
    texts = [Path(path).read_text()] if path else _packaged_tables()
    rules, ids = [], set()
    for raw in (r for text in texts for r in tomllib.loads(text).get("rule", [])):
        name = raw.get("id", "?")
        missing = [k for k in ("id", "signature", "what", "evidence") if not raw.get(k)]
        missing += [] if raw.get("kafka") or raw.get("never") else ["kafka or never"]
        if missing:
            raise ValueError(f"verdict rule {name}: needs {', '.join(missing)}")
        if name in ids:
            raise ValueError(f"verdict rule {name}: the id is used twice")
        ids.add(name)
        if raw["signature"].count("/") != 3:
            raise ValueError(f"verdict rule {name}: signature must read Api/vN/path/kind")
        try:
            kafka = tuple(json.loads(v) for v in raw.get("kafka", ()))
            never = tuple(json.loads(v) for v in raw.get("never", ()))
            seen = {
                kind: tuple(json.loads(v) for v in values) for kind, values in raw.get("seen", {}).items()
            }
        except (json.JSONDecodeError, TypeError) as exc:
            raise ValueError(f"verdict rule {name}: values are JSON texts ({exc})") from None
        rules.append(
            Rule(
                name,
                raw["signature"],
                kafka,
                raw["what"],
                raw["evidence"],
                raw.get("shape", "*"),
                seen,
                never,
                tuple(
                    [raw["shape_excludes"]]
                    if isinstance(raw.get("shape_excludes"), str)
                    else raw.get("shape_excludes", ())
                ),
            )
        )
    return rules


def judge(cause: Cause, rules: list[Rule], names: tuple[str, str]) -> dict:
    """The verdict on ``cause`` between targets named ``names`` (sides a and b): who deviates from
    Kafka, by which rule. ``sides`` lists the deviating sides ("a", "b"), ``deviates`` their names."""
    findings = []
    shapes = [cause.shape] if cause.shape else sorted(cause.request_shapes)
    crashed = any(f.kind == "fate" and v in _NEVER for f in cause.facets for v in (f.a_value, f.b_value))
    if shapes and not crashed and all(any(part in shape for part in CONSEQUENCES) for shape in shapes):
        return dict(CONSEQUENCES[next(part for part in CONSEQUENCES if part in shapes[0])])
    for facet in cause.facets:
        values = (facet.a_value, facet.b_value)
        never = next((v for v in values if facet.kind == "fate" and v in _NEVER), None)
        if never is not None:
            sides = tuple(side for side, v in zip("ab", values, strict=True) if v in _NEVER)
            findings.append((sides, never, ("answered", "closed", "no_response"), *_NEVER[never]))
            continue
        for rule in (r for r in rules if r.covers(cause, facet)):
            if rule.kafka:
                sides = tuple(side for side, v in zip("ab", values, strict=True) if v not in rule.kafka)
            else:
                sides = tuple(side for side, v in zip("ab", values, strict=True) if v in rule.never)
                if not sides:
                    continue  # the rule cannot tell: a later one may
            findings.append(
                (sides, rule.id, rule.kafka or (f"anything but {rule.never}",), rule.what, rule.evidence)
            )
            break
    if not findings:
        return {
            "sides": None,
            "deviates": None,
            "rule": None,
            "text": "unknown: no rule says what Kafka answers",
        }
    if len({f[0] for f in findings}) > 1:
        named = ", ".join(sorted({f[1] for f in findings}))
        return {"sides": None, "deviates": None, "rule": named, "text": f"unknown: rules disagree ({named})"}
    sides, rule_id, kafka, what, evidence = findings[0]
    deviates = [names["ab".index(side)] for side in sides]
    if not sides:
        text = f"Kafka allows both answers: {what}"
    elif len(sides) == 2:
        text = f"both deviate from Kafka: {what}"
    else:
        text = f"{deviates[0]} deviates from Kafka: {what}"
    return {
        "sides": list(sides),
        "deviates": deviates,
        "rule": rule_id,
        "kafka": list(kafka),
        "text": text,
        "evidence": evidence,
    }


def news(causes: list[dict], rules: list[Rule], kinds: tuple[str, str]) -> tuple[list[str], list[str]]:
    """Checks summary.json's causes of a run between targets of ``kinds`` (a's, b's) against the pinned
    ``seen`` values. Returns (what is new: a cause without a verdict, or a deviating value no rule pins
    for that kind; what is stale: a pinned (rule, kind, value) that the run did not show)."""
    by_id = {r.id: r for r in rules}
    new, shown = [], set()
    for cause in causes:
        verdict = cause.get("verdict") or {}
        if verdict.get("sides") is None:
            new.append(f"{cause['title']}: {verdict.get('text', 'no verdict')}")
            continue
        rule = by_id.get(verdict["rule"])
        if rule is None:  # a built-in rule (a crash, an undecodable answer): not pinned per peer
            continue
        for facet in cause["facets"]:
            if not rule.covers_field(cause["api_name"], cause["versions"], facet["path"], facet["kind"]):
                continue
            for side in verdict["sides"]:
                kind, value = kinds["ab".index(side)], facet[side]
                if value in rule.seen.get(kind, ()):
                    shown.add((rule.id, kind, json.dumps(value)))
                else:
                    new.append(
                        f"{cause['title']}: {kind} answers {value!r}, which rule {rule.id} does not pin"
                    )
    stale = [
        f"{rule.id}: {kind} {json.dumps(value)}"
        for rule in rules
        for kind, values in rule.seen.items()
        if kind in kinds
        for value in values
        if (rule.id, kind, json.dumps(value)) not in shown
    ]
    return new, stale
