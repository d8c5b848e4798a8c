"""One conformance run: the catalogue against one running target. A run directory holds its outcomes as
rule rows (``rules/part-000000.parquet``, the reports' input; ``outcomes.jsonl``, the same for reading),
its per-API ledger (``ledger.json``) and ``conform.json`` (the run: id, target, what the target
advertised, what differs from the outcomes known for that kind of target)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kconform.codecs import api_schema
from kconform.traces.rules import RuleRow, write_rule_rows

from .catalogue import Rule, catalogue
from .expected import Expected, Surprise, expected_for, surprises
from .ledger import ledger
from .runner import Outcome, run_rules

__all__ = ["ConformResult", "run_conformance"]


@dataclass
class ConformResult:
    target: str
    outcomes: list[Outcome]
    ledger: dict
    surprises: list[Surprise]
    rules: int
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)


def run_conformance(
    target,
    *,
    out: Path | None = None,
    pick: str = "all",
    only: tuple[str, ...] = (),
    on_outcome=None,
    seconds: float | None = None,
) -> ConformResult:
    """Run every rule (or those whose id starts with one of ``only``) against a started ``target``;
    with ``seconds``, only the tests that start within that budget (the others are ``not-run``)."""
    rules: list[Rule] = [r for r in catalogue().values() if not only or r.id.startswith(only)]
    run_id = f"conform-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    served = target.api_versions(refresh=True)
    started = time.monotonic()
    outcomes = asyncio.run(
        run_rules(
            rules,
            target=target.name,
            bootstrap=target.bootstrap,
            served=served,
            can=frozenset(getattr(target, "conform_can", ())),
            pick=pick,
            on_outcome=on_outcome,
            handle=target,
            deadline=None if seconds is None else started + seconds,
        )
    )
    summary = ledger(outcomes, target=target.name, served=served)
    summary["rules"] = len(rules)
    known = expected_for(target.kind, set(catalogue()))
    found = surprises(outcomes, known)
    result = ConformResult(target.name, outcomes, summary, found, len(rules), time.monotonic() - started)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        rows = out / "outcomes.jsonl"
        with rows.open("w") as f:
            for outcome in outcomes:
                f.write(json.dumps(outcome.to_json()) + "\n")
        book = out / "ledger.json"
        book.write_text(json.dumps(summary, indent=1) + "\n")
        table = write_rule_rows(out, run_id, rule_rows(outcomes, known, found))
        run = out / "conform.json"
        run.write_text(
            json.dumps(
                {
                    "schema": 1,
                    "run_id": run_id,
                    "target": target.name,
                    "kind": target.kind,
                    "started_at": started_at,
                    "versions": pick,
                    "rules": len(rules),
                    "seconds": round(result.seconds, 1),
                    "budget_s": seconds,
                    "apis": [
                        {"api_key": k, "api_name": _api_name(k), "versions": list(v)}
                        for k, v in sorted(served.items())
                    ],
                    "surprises": [s.describe() for s in found],
                },
                indent=1,
            )
            + "\n"
        )
        result.files = {"outcomes": rows, "ledger": book, "rules": table, "run": run}
    return result


def rule_rows(outcomes: list[Outcome], known: dict[str, Expected], found: list[Surprise]) -> list[RuleRow]:
    """The outcomes as rule rows, each with what is known of this kind of target and whether it is news."""
    news = {id(s.outcome): s.expected for s in found}
    by_id = catalogue()
    rows = []
    for o in outcomes:
        entry = known.get(o.rule)
        if id(o) in news:
            expected = news[id(o)]
        elif entry is not None and entry.covers(o):
            expected = entry.outcome
        else:
            expected = o.outcome if o.outcome == "not-applicable" else "pass"
        rows.append(
            RuleRow(
                target=o.target,
                rule_id=o.rule,
                family=o.family,
                api_key=o.api_key,
                api_name=o.api,
                api_version=o.version,
                outcome=o.outcome,
                expected_outcome=expected,
                surprise=id(o) in news,
                kafka_source=by_id[o.rule].source if o.rule in by_id else "",
                duration_us=int(o.seconds * 1_000_000),
                started_at_us=o.started_at_us,
                field=o.field or None,
                kafka_value=o.expected or None,
                target_value=o.got or None,
                detail=o.detail or None,
            )
        )
    return rows


def _api_name(api_key: int) -> str:
    try:
        return api_schema(api_key).name
    except KeyError:  # a key the codecs do not know (a target's own API): named by its number
        return f"api-{api_key}"
