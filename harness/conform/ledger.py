"""The per-API ledger of one target: does it route the API (advertise it), and how much of Kafka's
behaviour for it holds (the share of that API's rule tests passed, with the count it is a share of).
Pure over the outcomes, so a report can rebuild it from stored rows."""

from __future__ import annotations

import collections
from collections.abc import Iterable

from kconform.codecs import api_schemas
from kconform.traces.rules import semantics_grade

from .runner import Outcome

__all__ = ["ledger", "semantics_grade"]


def ledger(outcomes: Iterable[Outcome], *, target: str, served: dict[int, tuple[int, int]]) -> dict:
    counts: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    rules: dict[int, set[str]] = collections.defaultdict(set)
    for outcome in outcomes:
        counts[outcome.api_key][outcome.outcome] += 1
        rules[outcome.api_key].add(outcome.rule)
    apis = {}
    for schema in sorted(api_schemas(), key=lambda s: s.api_key):
        key = schema.api_key
        if key not in served and key not in counts:
            continue
        c = counts[key]
        ran = c["pass"] + c["fail"]
        apis[schema.name] = {
            "api_key": key,
            "routed": key in served,
            "versions": list(served[key]) if key in served else None,
            "rules": len(rules[key]),
            "tests": sum(c.values()),
            "passed": c["pass"],
            "failed": c["fail"],
            "not_applicable": c["not-applicable"],
            "errors": c["error"],
            "not_run": c["not-run"],
            "semantics": semantics_grade(c["pass"], c["fail"]),
            "passed_share": round(c["pass"] / ran, 4) if ran else None,  # of the tests that ran: `ran`
        }
    total = collections.Counter()
    for c in counts.values():
        total.update(c)
    return {
        "target": target,
        "tests": sum(total.values()),
        "passed": total["pass"],
        "failed": total["fail"],
        "not_applicable": total["not-applicable"],
        "errors": total["error"],
        "not_run": total["not-run"],
        "apis": apis,
    }
