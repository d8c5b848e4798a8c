"""The report's files for machines: ``summary.json`` and JUnit XML, written atomically.

``summary.json`` (schema 1) holds the whole roll-up, the difference from the previous report and the
history over runs, so that it can itself be the ``--previous`` of a later report. The JUnit file has
four suites: the conformance grid (a testcase per API version and target, failing on divergences,
erroring on error outcomes), the chaos verdicts (a testcase per scenario and target, failing on a
broken promise, erroring when the scenario could not run, skipped when it proved nothing), the
divergence clusters (a failing testcase each, carrying its repro command) and the conformance rules
(a testcase per rule and target, failing only on news)."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .compare import Comparison
from .markup import version_label
from .model import ChaosVerdict, Rollup, count_basis

__all__ = [
    "SUMMARY_SCHEMA",
    "atomic_write_text",
    "junit_xml",
    "summary_json",
    "write_junit",
    "write_summary_json",
]

SUMMARY_SCHEMA = 1
# Characters XML 1.0 cannot hold, even escaped; trace text (signatures, history lines) may carry them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
INCONCLUSIVE = (
    "faults-did-not-bite",
    "faults-not-applied",
    "no-progress",
)  # chaos verdicts that prove nothing


def atomic_write_text(path: Path, text: str) -> None:
    """Write beside the target and rename over it, so a reader never sees half a file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def summary_json(
    rollup: Rollup, comparison: Comparison, *, generated_at: str | None = None, title: str | None = None
) -> dict[str, Any]:
    violations = sum(1 for v in rollup.chaos if v.verdict == "violation")
    totals = {
        "runs": len(rollup.runs),
        "exchanges": rollup.exchanges,
        "grid_cells": len(rollup.grid),
        "failing_cells": sum(1 for c in rollup.grid if c.deviates or c.unknown),  # as JUnit fails them
        "divergence_signatures": len(rollup.divergences),
        "chaos_results": len(rollup.chaos),
        "chaos_violations": violations,
        "pass_rate": comparison.pass_rate,
        "new_divergences": len(comparison.new_divergences),
        "first_found": len(comparison.first_found),
        "unconfirmed": len(comparison.unconfirmed),
        "fixed_divergences": len(comparison.fixed_divergences),
        "still_there": len(comparison.still_there),
        "not_replayed": len(comparison.not_replayed),
        "crashes": sum(c.times for c in rollup.crashes),
        "rule_tests": sum(c.tests for c in rollup.rules),
        "rule_tests_passed": sum(c.passed for c in rollup.rules),
        "rule_tests_ran": sum(c.ran for c in rollup.rules),  # passed + failed: the pass share's denominator
        "rule_surprises": sum(c.surprises for c in rollup.rules),
        "rule_changes": len(comparison.rule_changes),
    }
    return {
        "schema": SUMMARY_SCHEMA,
        "title": title,
        "generated_at": generated_at,
        "totals": totals,
        **rollup.to_json(),
        "comparison": comparison.to_json(),
        "history": [p.to_json() for p in comparison.history],
        "rule_history": [asdict(r) for r in comparison.rule_history],
        "cause_history": [c.to_json() for c in comparison.cause_history],
        "api_trend": [asdict(p) for p in comparison.api_trend],
    }


def write_summary_json(
    path: Path,
    rollup: Rollup,
    comparison: Comparison,
    *,
    generated_at: str | None = None,
    title: str | None = None,
) -> None:
    data = summary_json(rollup, comparison, generated_at=generated_at, title=title)
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=False) + "\n")


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")


def _grid_suite(rollup: Rollup) -> ET.Element:
    suite = ET.Element("testsuite", name="kconform.grid")
    for c in rollup.grid:
        case = _case(suite, f"kconform.grid.{c.target}", f"{c.api_name} {version_label(c.api_version)}")
        counts = (
            f"{c.total} exchanges: {c.passed} passed, {c.diverged} diverged, {c.errors} errors, "
            f"{c.timeouts} timeouts, {c.closed} closed, {c.skipped} skipped"
        )
        # Only a divergence this target owns fails its cell: one whose verdict names it, or one no
        # verdict tells about (both targets fail then). An answer with an error code is Kafka's answer
        # too when the targets agree on it, and client operations under faults are judged by their
        # chaos verdicts.
        if c.deviates or c.unknown:
            owned = [f"{n} {what}" for n, what in ((c.deviates, "deviate from Kafka"), (c.unknown, "with an "
                     "unknown verdict")) if n]  # fmt: skip
            message = f"{c.diverged} diverged: {', '.join(owned)}"
            ET.SubElement(case, "failure", type="divergence", message=message).text = counts
        else:
            cleared = f"; the other target deviates in all {c.diverged} that diverged" if c.diverged else ""
            ET.SubElement(case, "system-out").text = counts + cleared
    return suite


def _chaos_suite(rollup: Rollup) -> ET.Element:
    suite = ET.Element("testsuite", name="kconform.chaos")
    for v in rollup.chaos:
        case = _case(suite, f"kconform.chaos.{v.target}", v.scenario)
        if v.verdict == "violation":
            broken = ", ".join(f"{name} x{n}" for name, n in sorted(v.violations.items()))
            excerpts = "\n\n".join(
                f"{name}:\n" + "\n".join(map(str, lines)) for name, lines in sorted(v.excerpts.items())
            )
            failure = ET.SubElement(case, "failure", type="violation", message=f"{v.promise}: {broken}")
            failure.text = excerpts
        elif v.verdict == "error":
            ET.SubElement(case, "error", type="error", message=v.error or "the scenario could not run")
        elif v.verdict in INCONCLUSIVE:
            ET.SubElement(case, "skipped", message=v.verdict)
        ET.SubElement(case, "system-out").text = _chaos_counts(v)
    return suite


def _chaos_counts(v: ChaosVerdict) -> str:
    """The promise, the operations and the allowed anomalies as measured, each count with what it is
    counted among."""
    basis = count_basis([v])
    completed = f"{v.operations} operations"
    if v.acknowledged is not None:
        completed = f"{v.acknowledged} acknowledged of {completed}"
    allowed = ", ".join(f"{name} {n} {basis}" for name, n in v.allowed.items()) or "none"
    return f"{v.promise}; {completed}; allowed anomalies measured: {allowed}; run {v.run_id}"


def _divergence_suite(rollup: Rollup) -> ET.Element:
    """A testcase per signature and target it was seen on, failed on the targets that deviate from
    Kafka (both when the verdict is unknown) and passed, with the verdict, on the one that matches."""
    suite = ET.Element("testsuite", name="kconform.divergences")
    for d in rollup.divergences:
        values = "; ".join(f"{' vs '.join(pair)}" for pair in d.values)
        detail = "\n".join(
            line
            for line in (
                f"verdict: {d.verdict_text}",
                f"Kafka: {d.evidence}" if d.evidence else "",
                f"values ({' vs '.join(d.sides)}): {values}" if values else "",
                *(f"step: {step}" for step in d.steps),
                f"example case: {d.example_case}" if d.example_case else "",
                f"replay: {d.repro}" if d.repro else "",
                f"runs: {', '.join(d.runs)}",
            )
            if line
        )
        for target in d.sides or d.targets:
            case = _case(suite, f"kconform.divergences.{target}.{d.api_name}", d.signature)
            if target in d.deviates:
                message = f"{d.pairs} compared pairs in {d.cases} cases differ; {d.verdict_text}"
                ET.SubElement(case, "failure", type=f"divergence-{d.verdict}", message=message).text = detail
            else:
                ET.SubElement(case, "system-out").text = detail
    return suite


def _rules_suite(rollup: Rollup) -> ET.Element:
    """A testcase per rule and target (each target's newest conformance run): a failure or error that
    is news fails or errs; one known for that kind of target, and a rule that does not apply there,
    is skipped with the reason, so a CI job turns red on news only."""
    suite = ET.Element("testsuite", name="kconform.rules")
    results: dict[tuple[str, str], list] = {}
    for r in rollup.rule_results:
        results.setdefault((r.target, r.rule_id), []).append(r)
    for target, statuses in rollup.rule_status.items():
        for rule, status in statuses.items():
            case = _case(suite, f"kconform.rules.{target}", rule)
            found = results.get((target, rule), [])
            news = [r for r in found if r.surprise]
            if news:
                r = news[0]
                kind = "failure" if r.outcome == "fail" else "error"
                where = f"v{r.api_version}: {r.field}" if r.field else f"v{r.api_version}"
                element = ET.SubElement(case, kind, type=r.outcome, message=f"{where} ({r.kafka_source})")
                element.text = "\n".join(
                    f"v{x.api_version}: {x.outcome} (known: {x.expected_outcome}); Kafka: {x.kafka_value}; "
                    f"{target}: {x.target_value}; {x.detail or ''}"
                    for x in news
                )
            elif found:
                ET.SubElement(case, "skipped", message=f"known {found[0].outcome} on this kind of target")
            elif status in ("not-applicable", "not-run"):
                why = (
                    "not applicable on this target" if status == "not-applicable" else "not run: budget spent"
                )
                ET.SubElement(case, "skipped", message=why)
    return suite


def _count(suite: ET.Element) -> dict[str, int]:
    cases = suite.findall("testcase")
    return {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
    }


def _make_xml_safe(root: ET.Element) -> None:
    for element in root.iter():
        if element.text:
            element.text = _NOT_XML.sub("\ufffd", element.text)
        for key, value in element.attrib.items():
            element.set(key, _NOT_XML.sub("\ufffd", value))


def junit_xml(rollup: Rollup, *, timestamp: str | None = None) -> str:
    root = ET.Element("testsuites", name="kconform")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    suites = (_grid_suite(rollup), _chaos_suite(rollup), _divergence_suite(rollup), _rules_suite(rollup))
    for suite in suites:
        counts = _count(suite)
        suite.attrib.update({k: str(n) for k, n in counts.items()} | {"time": "0"})
        if timestamp:
            suite.set("timestamp", timestamp)
        totals = {k: totals[k] + counts[k] for k in totals}
        root.append(suite)
    root.attrib.update({k: str(n) for k, n in totals.items() if k != "skipped"} | {"time": "0"})
    _make_xml_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, rollup: Rollup, *, timestamp: str | None = None) -> None:
    atomic_write_text(path, junit_xml(rollup, timestamp=timestamp))
