"""One conformance run: the catalogue against one running target, its outcomes written as trace rows
(``outcomes.jsonl``), its per-API ledger (``ledger.json``) and what differs from the outcomes known for
that kind of target."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from .catalogue import Rule, catalogue
from .expected import Surprise, expected_for, surprises
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
) -> ConformResult:
    """Run every rule (or those whose id starts with one of ``only``) against a started ``target``."""
    rules: list[Rule] = [r for r in catalogue().values() if not only or r.id.startswith(only)]
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
        )
    )
    summary = ledger(outcomes, target=target.name, served=served)
    summary["rules"] = len(rules)
    found = surprises(outcomes, expected_for(target.kind, set(catalogue())))
    result = ConformResult(target.name, outcomes, summary, found, len(rules), time.monotonic() - started)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        rows = out / "outcomes.jsonl"
        with rows.open("w") as f:
            for outcome in outcomes:
                f.write(json.dumps(outcome.to_json()) + "\n")
        book = out / "ledger.json"
        book.write_text(json.dumps(summary, indent=1) + "\n")
        result.files = {"outcomes": rows, "ledger": book}
    return result
